-- Unschedulable group attempts by plugin and day: how many attempts each plugin rejected
-- nodes in, and how many nodes in total (from the compact diagnosis of PodGroupUnschedulable;
-- a PodGroupRetried counts as an attempt with the diagnosis it points to). Attempts that failed
-- before any node was filtered (gang quorum, placement feasibility, validation errors) are
-- counted under plugin '(none)' with their reason.
CREATE OR REPLACE VIEW v_unschedulable_reasons AS
WITH attempts AS (
    SELECT e.effective_at, e.data AS d FROM events e WHERE e.type = 'PodGroupUnschedulable'
    UNION ALL
    SELECT r.effective_at, u.data
    FROM events r JOIN events u ON u.position = (r.data->>'diagnosis_position')::bigint
    WHERE r.type = 'PodGroupRetried'
)
SELECT date_trunc('day', a.effective_at) AS day, r.key AS plugin, a.d->>'reason' AS reason,
       count(*) AS attempts, sum(r.value::bigint) AS rejected_nodes
FROM attempts a
CROSS JOIN LATERAL jsonb_each_text(a.d->'diagnosis'->'rejected') AS r(key, value)
GROUP BY 1, 2, 3
UNION ALL
SELECT date_trunc('day', a.effective_at), '(none)', a.d->>'reason', count(*), 0
FROM attempts a
WHERE coalesce(a.d->'diagnosis'->'rejected', '{}'::jsonb) = '{}'::jsonb
GROUP BY 1, 2, 3;
