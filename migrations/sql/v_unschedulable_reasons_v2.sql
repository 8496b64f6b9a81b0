-- Unschedulable group attempts by plugin, reason code and day (issue 21): how many attempts each
-- plugin rejected nodes in, and how many nodes in total (from the compact diagnosis of
-- PodGroupUnschedulable; a PodGroupRetried counts as an attempt with the diagnosis it points to).
-- `reason` is the attempt's primary reason code: the first of the decision's `codes`
-- (scheduler/reason_codes.py: InsufficientResource(cpu), TaintNotTolerated, QuotaMaxExceeded,
-- GangQuorumNotReached, PreemptionNoVictims, ...), so each attempt counts once per plugin;
-- `codes` lists all of them. Attempts that failed before any node was filtered (quota, gang
-- quorum, validation) are counted under plugin '(none)'. Decisions written before codes existed
-- read 'Unclassified'.
CREATE OR REPLACE VIEW v_unschedulable_reasons AS
WITH attempts AS (
    SELECT e.effective_at, e.data AS d FROM events e WHERE e.type = 'PodGroupUnschedulable'
    UNION ALL
    SELECT r.effective_at, u.data
    FROM events r JOIN events u ON u.position = (r.data->>'diagnosis_position')::bigint
    WHERE r.type = 'PodGroupRetried'
), coded AS (
    SELECT a.effective_at, a.d, coalesce(a.d->'codes'->>0, 'Unclassified') AS code,
           coalesce(nullif(a.d->'codes', '[]'::jsonb), '["Unclassified"]'::jsonb) AS codes
    FROM attempts a
)
SELECT date_trunc('day', a.effective_at) AS day, r.key AS plugin, a.code AS reason,
       count(*) AS attempts, sum(r.value::bigint) AS rejected_nodes, a.codes
FROM coded a
CROSS JOIN LATERAL jsonb_each_text(a.d->'diagnosis'->'rejected') AS r(key, value)
GROUP BY 1, 2, 3, 6
UNION ALL
SELECT date_trunc('day', a.effective_at), '(none)', a.code, count(*), 0, a.codes
FROM coded a
WHERE coalesce(a.d->'diagnosis'->'rejected', '{}'::jsonb) = '{}'::jsonb
GROUP BY 1, 2, 3, 6;
