-- Resource changes per node: +requests when a pod is bound, -requests when a bound pod is
-- preempted or deleted. Requests are those recorded in the PodBound decision.
CREATE OR REPLACE VIEW v_pod_allocation_changes AS
WITH binds AS (
    SELECT position, effective_at, data->>'pod' AS pod, data->>'node' AS node,
           coalesce((data->'requests'->>'cpu')::bigint, 0) AS cpu_milli,
           coalesce((data->'requests'->>'memory')::bigint, 0) AS memory_bytes,
           coalesce((data->'requests'->>'nvidia.com/gpu')::bigint, 0) AS gpus
    FROM events WHERE type = 'PodBound'
), ends AS (
    SELECT e.position, e.effective_at,
           CASE WHEN e.type = 'PodPreempted' THEN e.data->>'victim'
                ELSE (e.data->>'namespace') || '/' || (e.data->>'name') END AS pod
    FROM events e WHERE e.type IN ('PodPreempted', 'PodDeleted')
)
SELECT b.position, b.effective_at AS at, b.node, b.pod, split_part(b.pod, '/', 1) AS namespace,
       b.cpu_milli, b.memory_bytes, b.gpus, 1 AS pods
FROM binds b
UNION ALL
SELECT x.position, x.effective_at, b.node, x.pod, split_part(x.pod, '/', 1),
       -b.cpu_milli, -b.memory_bytes, -b.gpus, -1
FROM ends x
JOIN LATERAL (
    SELECT * FROM binds b WHERE b.pod = x.pod AND b.position < x.position ORDER BY b.position DESC LIMIT 1
) b ON true
WHERE NOT EXISTS (  -- the bind already ended (preempted, then deleted): count it once
    SELECT 1 FROM ends y WHERE y.pod = x.pod AND y.position > b.position AND y.position < x.position
);
