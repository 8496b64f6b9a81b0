-- What is pending now (issue 21; issue 14: a retry that changed nothing is one PodRetried or one
-- PodGroupRetried pointing at the verdict it repeats, so a pod's last attempt is its last
-- PodUnschedulable or PodRetried, or its group's last attempt, and its codes and message are
-- those of the verdict).
-- Each PodGroup with pending member pods and each pending pod,
-- with how long it has waited, the reason codes and message of its last unschedulable verdict,
-- and its position in the queue (priority high first, then first observed first: the order the
-- scheduler's active queue pops entities). A group's member pods share the group's position.
-- kind: 'PodGroup' | 'Pod'; group: "ns/name" of the pod's PodGroup (NULL for plain pods and groups).
-- v3 (issue 34, migration 0031): the predicted start from pending_predictions, the derived
-- table the worker and `podledger predictions refresh` fill with explain's estimator
-- (docs/prediction.md): predicted_start_p50/p90 (as_of + the p50/p90 wait; NULL with a
-- predicted_as_of_position: not within a year), prediction_cases (the completed lifetimes it
-- rests on), predicted_as_of_position and predicted_as_of (the position it was computed as of,
-- and that position's time). A member pod carries its group's. NULL where none was computed
-- (beyond the refresh's limit or time budget, pending since its position, or the table emptied).
-- The rows are what is pending now; a prediction of an entity no longer pending never shows.
CREATE OR REPLACE VIEW v_pending_now AS
WITH pods AS (
    SELECT p.namespace, p.name, p.created_at, p.created_position,
           coalesce((p.object->'spec'->>'priority')::int, 0) AS priority,
           p.object->'spec'->'schedulingGroup'->>'podGroupName' AS pg
    FROM objects p
    WHERE p.kind = 'Pod' AND coalesce(p.status->>'phase', 'Pending') = 'Pending'
), groups AS (
    SELECT g.namespace, g.name, g.created_at, g.created_position,
           coalesce((g.object->'spec'->>'priority')::int, 0) AS priority, count(*) AS pending_pods
    FROM objects g JOIN pods p ON p.namespace = g.namespace AND p.pg = g.name
    WHERE g.kind = 'PodGroup'
    GROUP BY g.namespace, g.name, g.created_at, g.created_position, g.object
), entities AS (
    SELECT 'PodGroup'::text AS kind, namespace, name, NULL::text AS "group", priority, created_at,
           created_position, pending_pods
    FROM groups
    UNION ALL
    SELECT 'Pod', p.namespace, p.name, NULL, p.priority, p.created_at, p.created_position, 1
    FROM pods p
    WHERE p.pg IS NULL
), queued AS (
    SELECT e.*, row_number() OVER (ORDER BY e.priority DESC, e.created_position) AS queue_position
    FROM entities e
), group_last AS (
    SELECT q.namespace, q.name, u.position, u.effective_at, u.data
    FROM queued q
    CROSS JOIN LATERAL (
        SELECT coalesce(d.position, x.position) AS position, x.effective_at, coalesce(d.data, x.data) AS data
        FROM events x
        LEFT JOIN events d ON x.type = 'PodGroupRetried' AND d.position = (x.data->>'diagnosis_position')::bigint
        WHERE x.type IN ('PodGroupUnschedulable', 'PodGroupRetried')
          AND x.data->>'group' = q.namespace || '/' || q.name
        ORDER BY x.position DESC LIMIT 1
    ) u
    WHERE q.kind = 'PodGroup'
), rows AS (
    -- entity_kind, entity_name: what is predicted for the row (a member pod: its group)
    SELECT q.kind, q.namespace, q.name, q."group", q.priority, q.pending_pods, q.queue_position, q.created_at,
           q.kind AS entity_kind, q.name AS entity_name
    FROM queued q
    UNION ALL
    SELECT 'Pod', p.namespace, p.name, p.namespace || '/' || p.pg, p.priority, 1, q.queue_position, p.created_at,
           'PodGroup', p.pg
    FROM pods p JOIN queued q ON q.kind = 'PodGroup' AND q.namespace = p.namespace AND q.name = p.pg
)
SELECT r.kind, r.namespace, r.name, r."group", r.priority, r.pending_pods, r.queue_position,
       r.created_at AS waiting_since,
       extract(epoch FROM (now() - r.created_at))::double precision AS wait_seconds,
       coalesce(gl.data->'codes', pl.data->'codes', '[]'::jsonb) AS last_codes,
       coalesce(gl.data->'codes', pl.data->'codes')->>0 AS last_reason_code,
       coalesce(gl.data->>'message', pl.data->>'message') AS last_message,
       coalesce(gl.effective_at, greatest(pl.effective_at, gm.effective_at)) AS last_attempt_at,
       pp.as_of + pp.p50_seconds * interval '1 second' AS predicted_start_p50,
       pp.as_of + pp.p90_seconds * interval '1 second' AS predicted_start_p90,
       pp.cases AS prediction_cases,
       pp.as_of_position AS predicted_as_of_position,
       pp.as_of AS predicted_as_of
FROM rows r
LEFT JOIN pending_predictions pp
    ON pp.kind = r.entity_kind AND pp.namespace = r.namespace AND pp.name = r.entity_name
LEFT JOIN group_last gl ON r.kind = 'PodGroup' AND gl.namespace = r.namespace AND gl.name = r.name
-- a member pod was last attempted with its group (an unchanged group retry writes no PodUnschedulable)
LEFT JOIN group_last gm ON r.kind = 'Pod' AND gm.namespace || '/' || gm.name = r."group"
LEFT JOIN LATERAL (
    SELECT x.effective_at, coalesce(d.data, x.data) AS data
    FROM event_keys k
    JOIN events x ON x.position = k.position
    LEFT JOIN events d ON x.type = 'PodRetried' AND d.position = (x.data->>'diagnosis_position')::bigint
    WHERE r.kind = 'Pod' AND k.stream = 'sched/pod/' || r.namespace || '/' || r.name
      AND x.type IN ('PodUnschedulable', 'PodRetried')
    ORDER BY k.version DESC LIMIT 1
) pl ON true;
