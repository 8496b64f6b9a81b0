-- Node utilization over time: the running sum of allocation changes per node, against the
-- node's current allocatable.
CREATE OR REPLACE VIEW v_node_utilization AS
SELECT c.node, c.position, c.at,
       sum(c.cpu_milli) OVER w AS cpu_used_milli,
       sum(c.memory_bytes) OVER w AS memory_used_bytes,
       sum(c.gpus) OVER w AS gpus_used,
       sum(c.pods) OVER w AS pods,
       (n.object->'status'->'allocatable'->>'cpu')::bigint AS cpu_allocatable_milli,
       (n.object->'status'->'allocatable'->>'memory')::bigint AS memory_allocatable_bytes,
       coalesce((n.object->'status'->'allocatable'->>'nvidia.com/gpu')::bigint, 0) AS gpus_allocatable,
       round(sum(c.cpu_milli) OVER w / nullif((n.object->'status'->'allocatable'->>'cpu')::numeric, 0), 4) AS cpu_fraction
FROM v_pod_allocation_changes c
LEFT JOIN objects n ON n.kind = 'Node' AND n.namespace = '' AND n.name = c.node
WINDOW w AS (PARTITION BY c.node ORDER BY c.position);
