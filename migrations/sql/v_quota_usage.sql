-- Quota usage over time per namespace (running sum of allocation changes), with the
-- namespace's ElasticQuota min/max (cpu in milli-CPU) where one exists.
CREATE OR REPLACE VIEW v_quota_usage AS
SELECT c.namespace, c.position, c.at,
       sum(c.cpu_milli) OVER w AS cpu_used_milli,
       sum(c.memory_bytes) OVER w AS memory_used_bytes,
       sum(c.gpus) OVER w AS gpus_used,
       q.name AS quota,
       (q.object->'spec'->'min'->>'cpu')::bigint AS cpu_min_milli,
       (q.object->'spec'->'max'->>'cpu')::bigint AS cpu_max_milli,
       (q.object->'spec'->'min'->>'nvidia.com/gpu')::bigint AS gpus_min,
       (q.object->'spec'->'max'->>'nvidia.com/gpu')::bigint AS gpus_max
FROM v_pod_allocation_changes c
LEFT JOIN objects q ON q.kind = 'ElasticQuota' AND q.namespace = c.namespace
WINDOW w AS (PARTITION BY c.namespace ORDER BY c.position);
