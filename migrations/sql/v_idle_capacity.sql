-- Idle capacity per topology domain (issue 21): for every node label whose key starts with
-- "topology." (zone, rack, block, ...) and every value of it, how many nodes the domain has, how
-- many are idle (no bound pod), and the allocatable and free GPUs (nvidia.com/gpu) and CPU of the
-- domain now. Usage is the running sum of v_pod_allocation_changes (binds minus preemptions and
-- deletions) at the last change of each node.
CREATE OR REPLACE VIEW v_idle_capacity AS
WITH used AS (
    SELECT DISTINCT ON (u.node) u.node, u.cpu_used_milli, u.gpus_used, u.pods
    FROM v_node_utilization u
    ORDER BY u.node, u.position DESC
), nodes AS (
    SELECT n.name, n.object->'metadata'->'labels' AS labels,
           coalesce((n.object->'status'->'allocatable'->>'nvidia.com/gpu')::bigint, 0) AS gpus,
           coalesce((n.object->'status'->'allocatable'->>'cpu')::bigint, 0) AS cpu_milli,
           coalesce(u.gpus_used, 0) AS gpus_used, coalesce(u.cpu_used_milli, 0) AS cpu_used_milli,
           coalesce(u.pods, 0) AS pods
    FROM objects n LEFT JOIN used u ON u.node = n.name
    WHERE n.kind = 'Node' AND n.namespace = ''
)
SELECT l.key AS topology_key, l.value AS domain, count(*) AS nodes,
       count(*) FILTER (WHERE n.pods <= 0) AS idle_nodes,
       sum(n.gpus) AS gpus_allocatable,
       sum(greatest(n.gpus - n.gpus_used, 0)) AS gpus_free,
       sum(greatest(n.cpu_milli - n.cpu_used_milli, 0)) AS cpu_free_milli
FROM nodes n
CROSS JOIN LATERAL jsonb_each_text(coalesce(n.labels, '{}'::jsonb)) AS l(key, value)
WHERE l.key LIKE 'topology.%'
GROUP BY 1, 2;
