-- Time below minCount per PodGroup, from the live condition PodGroupSatisfied (KEP-6413, gate
-- PodGroupSatisfiedCondition): every PodGroupSatisfiedChanged event with status False opens a
-- span that lasts until the group's next change (or its deletion, or now() while it lasts).
-- seconds_below_min_count: the sum of those spans; times_below_min_count: how often the group
-- dropped below minCount (a False after anything but False); below_now: the last change is False.
CREATE OR REPLACE VIEW v_group_below_min_count AS
WITH changes AS (
    SELECT data->>'group' AS grp, position, effective_at, data->>'status' AS status,
           (data->>'scheduled')::int AS scheduled, (data->>'min_count')::int AS min_count
    FROM events WHERE type = 'PodGroupSatisfiedChanged'
    UNION ALL
    SELECT (data->>'namespace') || '/' || (data->>'name'), position, effective_at, 'Deleted', NULL, NULL
    FROM events WHERE type = 'PodGroupDeleted'
), spans AS (
    SELECT grp, position, status, scheduled, min_count, effective_at,
           lead(effective_at) OVER w AS next_at,
           lag(status) OVER w AS prev_status
    FROM changes
    WINDOW w AS (PARTITION BY grp ORDER BY position)
), last_change AS (
    SELECT DISTINCT ON (grp) grp, position, status, scheduled, min_count, effective_at,
           EXISTS (SELECT 1 FROM changes d
                   WHERE d.grp = spans.grp AND d.status = 'Deleted' AND d.position > spans.position) AS gone
    FROM spans WHERE status <> 'Deleted'
    ORDER BY grp, position DESC
)
SELECT split_part(s.grp, '/', 1) AS namespace, split_part(s.grp, '/', 2) AS name,
       coalesce(sum(extract(epoch FROM (coalesce(s.next_at, now()) - s.effective_at)))
                FILTER (WHERE s.status = 'False'), 0)::double precision AS seconds_below_min_count,
       count(*) FILTER (WHERE s.status = 'False' AND s.prev_status IS DISTINCT FROM 'False') AS times_below_min_count,
       l.status = 'False' AND NOT l.gone AS below_now,
       l.scheduled AS scheduled_now, l.min_count AS min_count_now, l.effective_at AS last_change_at
FROM spans s
JOIN last_change l USING (grp)
GROUP BY s.grp, l.status, l.gone, l.scheduled, l.min_count, l.effective_at;
