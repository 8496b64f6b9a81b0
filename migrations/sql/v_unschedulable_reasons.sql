-- Unschedulable group attempts by plugin and day: how many attempts each plugin rejected
-- nodes in, and how many nodes in total (from the compact diagnosis of PodGroupUnschedulable).
-- Attempts that failed before any node was filtered (gang quorum, placement feasibility,
-- validation errors) are counted under plugin '(none)' with their reason.
CREATE OR REPLACE VIEW v_unschedulable_reasons AS
SELECT date_trunc('day', e.effective_at) AS day, r.key AS plugin, e.data->>'reason' AS reason,
       count(*) AS attempts, sum(r.value::bigint) AS rejected_nodes
FROM events e
CROSS JOIN LATERAL jsonb_each_text(e.data->'diagnosis'->'rejected') AS r(key, value)
WHERE e.type = 'PodGroupUnschedulable'
GROUP BY 1, 2, 3
UNION ALL
SELECT date_trunc('day', e.effective_at), '(none)', e.data->>'reason', count(*), 0
FROM events e
WHERE e.type = 'PodGroupUnschedulable'
  AND coalesce(e.data->'diagnosis'->'rejected', '{}'::jsonb) = '{}'::jsonb
GROUP BY 1, 2, 3;
