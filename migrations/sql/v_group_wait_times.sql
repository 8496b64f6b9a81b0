-- Group wait time: from the PodGroup's first creation to its first PodGroupInitiallyScheduled=True.
-- Still-waiting groups have scheduled_at NULL and wait_seconds measured up to now().
CREATE OR REPLACE VIEW v_group_wait_times AS
WITH created AS (
    SELECT split_part(stream, '/', 2) AS namespace, split_part(stream, '/', 3) AS name,
           min(effective_at) AS created_at
    FROM events WHERE type = 'PodGroupCreated'
    GROUP BY 1, 2
), scheduled AS (
    SELECT split_part(data->>'group', '/', 1) AS namespace, split_part(data->>'group', '/', 2) AS name,
           min(effective_at) AS scheduled_at
    FROM events WHERE type = 'PodGroupConditionChanged' AND data->>'status' = 'True'
    GROUP BY 1, 2
)
SELECT c.namespace, c.name, c.created_at, s.scheduled_at,
       extract(epoch FROM (coalesce(s.scheduled_at, now()) - c.created_at))::double precision AS wait_seconds,
       s.scheduled_at IS NOT NULL AS scheduled
FROM created c LEFT JOIN scheduled s USING (namespace, name);
