-- GPU allocation over time (issue 21; issue 34: against the GPUs the nodes offered at that
-- position, not today's). One row per allocation change that moves GPUs (from
-- v_pod_allocation_changes), with the GPUs allocated in the cluster and in the pod's namespace
-- after it, and the allocatable GPUs of the nodes that existed then (the running sum of node
-- versions: + at a version's valid_from, - at its valid_to, from object_versions).
CREATE OR REPLACE VIEW v_gpu_allocation AS
WITH node_caps AS (
    SELECT v.valid_from, v.valid_to,
           coalesce((v.object->'status'->'allocatable'->>'nvidia.com/gpu')::bigint, 0) AS gpus
    FROM object_versions v
    WHERE v.kind = 'Node' AND v.namespace = ''
), cap_changes AS (
    SELECT valid_from AS position, gpus AS d FROM node_caps WHERE gpus <> 0
    UNION ALL
    SELECT valid_to, -gpus FROM node_caps WHERE gpus <> 0 AND valid_to < 9223372036854775807
), merged AS (
    SELECT c.position, c.at, c.namespace, c.node, c.pod, c.gpus, 0::bigint AS cap_d, true AS is_alloc
    FROM v_pod_allocation_changes c WHERE c.gpus <> 0
    UNION ALL
    SELECT position, NULL, NULL, NULL, NULL, 0, sum(d)::bigint, false FROM cap_changes GROUP BY position
), running AS (
    SELECT m.*,
           sum(m.gpus) OVER (ORDER BY m.position, m.is_alloc ROWS UNBOUNDED PRECEDING) AS gpus_allocated,
           sum(m.gpus) OVER (PARTITION BY m.namespace ORDER BY m.position ROWS UNBOUNDED PRECEDING)
               AS namespace_gpus_allocated,
           sum(m.cap_d) OVER (ORDER BY m.position, m.is_alloc ROWS UNBOUNDED PRECEDING) AS gpus_allocatable
    FROM merged m
)
SELECT position, at, namespace, node, pod, gpus AS gpus_delta, gpus_allocated, namespace_gpus_allocated,
       gpus_allocatable, round(gpus_allocated / nullif(gpus_allocatable, 0)::numeric, 4) AS gpu_fraction
FROM running WHERE is_alloc;
