-- GPU allocation over time (issue 21): one row per allocation change that moves GPUs (a bind,
-- a preemption or a deletion of a bound pod with nvidia.com/gpu requests, from
-- v_pod_allocation_changes), with the GPUs allocated in the whole cluster and in the pod's
-- namespace after it (running sums in log order), the GPUs the cluster's nodes offer now
-- (allocatable nvidia.com/gpu of the current nodes) and the allocated fraction of them.
CREATE OR REPLACE VIEW v_gpu_allocation AS
WITH cap AS (
    SELECT coalesce(sum(coalesce((n.object->'status'->'allocatable'->>'nvidia.com/gpu')::bigint, 0)), 0) AS gpus
    FROM objects n
    WHERE n.kind = 'Node' AND n.namespace = ''
), changes AS (
    SELECT c.position, c.at, c.namespace, c.node, c.pod, c.gpus
    FROM v_pod_allocation_changes c
    WHERE c.gpus <> 0
)
SELECT c.position, c.at, c.namespace, c.node, c.pod, c.gpus AS gpus_delta,
       sum(c.gpus) OVER (ORDER BY c.position ROWS UNBOUNDED PRECEDING) AS gpus_allocated,
       sum(c.gpus) OVER (PARTITION BY c.namespace ORDER BY c.position ROWS UNBOUNDED PRECEDING)
           AS namespace_gpus_allocated,
       cap.gpus AS gpus_allocatable,
       round(sum(c.gpus) OVER (ORDER BY c.position ROWS UNBOUNDED PRECEDING) / nullif(cap.gpus, 0)::numeric, 4)
           AS gpu_fraction
FROM changes c CROSS JOIN cap;
