-- Views and window functions over the analytics buckets (issue 34, migration 0025). See
-- docs/reports.md for the question each answers.

-- Unschedulable attempts per hour by primary reason code, binding resource (the resource of the
-- first InsufficientResource code, '' if none) and namespace.
CREATE OR REPLACE VIEW v_unschedulable_hourly AS
SELECT hour, k1 AS reason, k2 AS resource, k3 AS namespace, n AS attempts
FROM analytics_hourly WHERE metric = 'unschedulable';
-- (the same counts per minute are kept as metric 'unschedulable_minute' / 'preemptions_minute':
-- the edges of exact windows)

-- Preemptions per hour by preemptor namespace, victim namespace and rule.
CREATE OR REPLACE VIEW v_preemptions_hourly AS
SELECT hour, k1 AS preemptor_namespace, k2 AS victim_namespace, k3 AS rule, n AS preemptions
FROM analytics_hourly WHERE metric = 'preemptions';

-- Every level series densified to every hour from its first change to the last hour any
-- bucket has: level at the hour's end and its time average over the hour (exact, from delta
-- and tail); level_seconds is the level's integral over the hour.
CREATE OR REPLACE VIEW v_levels_hourly AS
WITH series AS (
    SELECT metric, k1, k2, k3, min(hour) AS first_hour
    FROM analytics_hourly WHERE metric IN ('pending_pods', 'pending_groups', 'allocated', 'capacity', 'below_min')
    GROUP BY 1, 2, 3, 4
), span AS (
    SELECT max(hour) AS last_hour FROM analytics_hourly
), grid AS (
    SELECT s.metric, s.k1, s.k2, s.k3, g.hour
    FROM series s CROSS JOIN span
    CROSS JOIN LATERAL generate_series(s.first_hour, span.last_hour, interval '1 hour') AS g(hour)
), filled AS (
    SELECT g.metric, g.k1, g.k2, g.k3, g.hour, coalesce(a.delta, 0) AS delta, coalesce(a.tail, 0) AS tail,
           sum(coalesce(a.delta, 0)) OVER w AS level_end
    FROM grid g
    LEFT JOIN analytics_hourly a USING (metric, k1, k2, k3, hour)
    WINDOW w AS (PARTITION BY g.metric, g.k1, g.k2, g.k3 ORDER BY g.hour ROWS UNBOUNDED PRECEDING)
)
SELECT metric, k1, k2, k3, hour, level_end,
       ((level_end - delta) * 3600 + tail) / 3600 AS level_avg,
       (level_end - delta) * 3600 + tail AS level_seconds
FROM filled;

-- Allocated cpu (milli), memory (bytes) and GPUs against the capacity the nodes offered in that
-- hour (cluster-wide; at the hour's end and time-averaged over it).
CREATE OR REPLACE VIEW v_allocation_hourly AS
WITH per_hour AS (
    SELECT hour, k1 AS resource,
           sum(delta) FILTER (WHERE metric = 'allocated') AS a_delta,
           sum(tail) FILTER (WHERE metric = 'allocated') AS a_tail,
           sum(delta) FILTER (WHERE metric = 'capacity') AS c_delta,
           sum(tail) FILTER (WHERE metric = 'capacity') AS c_tail
    FROM analytics_hourly WHERE metric IN ('allocated', 'capacity')
    GROUP BY 1, 2
), series AS (
    SELECT resource, min(hour) AS first_hour FROM per_hour GROUP BY 1
), span AS (
    SELECT max(hour) AS last_hour FROM analytics_hourly
), filled AS (
    SELECT s.resource, g.hour,
           coalesce(p.a_delta, 0) AS a_delta, coalesce(p.a_tail, 0) AS a_tail,
           coalesce(p.c_delta, 0) AS c_delta, coalesce(p.c_tail, 0) AS c_tail,
           sum(coalesce(p.a_delta, 0)) OVER w AS allocated_end,
           sum(coalesce(p.c_delta, 0)) OVER w AS capacity_end
    FROM series s CROSS JOIN span
    CROSS JOIN LATERAL generate_series(s.first_hour, span.last_hour, interval '1 hour') AS g(hour)
    LEFT JOIN per_hour p ON p.resource = s.resource AND p.hour = g.hour
    WINDOW w AS (PARTITION BY s.resource ORDER BY g.hour ROWS UNBOUNDED PRECEDING)
), avg AS (
    SELECT resource, hour, allocated_end, capacity_end,
           ((allocated_end - a_delta) * 3600 + a_tail) / 3600 AS allocated_avg,
           ((capacity_end - c_delta) * 3600 + c_tail) / 3600 AS capacity_avg
    FROM filled
)
SELECT hour, resource, allocated_end, allocated_avg, capacity_end, capacity_avg,
       round((allocated_avg / nullif(capacity_avg, 0))::numeric, 4) AS fraction_avg,
       round((allocated_end / nullif(capacity_end, 0))::numeric, 4) AS fraction_end
FROM avg;

-- Pending depth per namespace and hour (pods and PodGroups: at the hour's end and on average).
CREATE OR REPLACE VIEW v_pending_hourly AS
SELECT hour, k1 AS namespace,
       sum(level_end) FILTER (WHERE metric = 'pending_pods') AS pods_end,
       sum(level_avg) FILTER (WHERE metric = 'pending_pods') AS pods_avg,
       sum(level_end) FILTER (WHERE metric = 'pending_groups') AS groups_end,
       sum(level_avg) FILTER (WHERE metric = 'pending_groups') AS groups_avg
FROM v_levels_hourly WHERE metric IN ('pending_pods', 'pending_groups')
GROUP BY 1, 2;

-- Time below minCount per namespace and hour: PodGroups below at the hour's end and the
-- group-seconds spent below in the hour.
CREATE OR REPLACE VIEW v_below_min_hourly AS
SELECT hour, k1 AS namespace, level_end AS groups_below_end, level_seconds AS group_seconds_below
FROM v_levels_hourly WHERE metric = 'below_min';

-- Every start with its wait, namespace, ElasticQuota (the namespace's, now) and priority.
CREATE OR REPLACE VIEW v_waits AS
SELECT w.position, w.at, w.kind, w.namespace, w.name, coalesce(q.name, '') AS quota, w.priority, w.wait_seconds
FROM analytics_waits w
LEFT JOIN LATERAL (
    SELECT o.name FROM objects o WHERE o.kind = 'ElasticQuota' AND o.namespace = w.namespace ORDER BY o.name LIMIT 1
) q ON true;

-- Wait p50/p90 per hour by namespace, quota and priority (exact: from every start in the hour).
CREATE OR REPLACE VIEW v_wait_percentiles_hourly AS
SELECT date_trunc('hour', at, 'UTC') AS hour, namespace, quota, priority, count(*) AS starts,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY wait_seconds) AS p50_seconds,
       percentile_cont(0.9) WITHIN GROUP (ORDER BY wait_seconds) AS p90_seconds
FROM v_waits GROUP BY 1, 2, 3, 4;

-- The parts of a window [p_from, p_to) that buckets answer (hours in UTC): whole hours, then
-- whole minutes outside them; the rest (under a minute at each edge) is read from the events.
CREATE OR REPLACE FUNCTION analytics_window(p_from timestamptz, p_to timestamptz,
    OUT h_lo timestamptz, OUT h_hi timestamptz, OUT m_lo timestamptz, OUT m_hi timestamptz)
LANGUAGE sql IMMUTABLE
AS $$
SELECT CASE WHEN date_trunc('hour', p_from, 'UTC') = p_from THEN p_from
            ELSE date_trunc('hour', p_from, 'UTC') + interval '1 hour' END,
       date_trunc('hour', p_to, 'UTC'),
       CASE WHEN date_trunc('minute', p_from, 'UTC') = p_from THEN p_from
            ELSE date_trunc('minute', p_from, 'UTC') + interval '1 minute' END,
       date_trunc('minute', p_to, 'UTC')
$$;

-- Bucketed counts of a window: metric's whole hours and its <metric>_minute rows outside them.
CREATE OR REPLACE FUNCTION analytics_bucket_counts(p_metric text, p_from timestamptz, p_to timestamptz)
RETURNS TABLE (k1 text, k2 text, k3 text, n bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
SELECT a.k1, a.k2, a.k3, sum(a.n)::bigint
FROM analytics_window(p_from, p_to) w
JOIN analytics_hourly a ON
     (a.metric = p_metric AND a.hour >= w.h_lo AND a.hour < w.h_hi)
  OR (a.metric = p_metric || '_minute' AND a.hour >= w.m_lo AND a.hour < w.m_hi
      AND NOT (a.hour >= w.h_lo AND a.hour < w.h_hi))
GROUP BY 1, 2, 3
$$;

-- Top unschedulable reasons over any window [p_from, p_to): buckets, and the raw events of the
-- partial minutes at both edges (same rules as the projection: a member pod's verdict counts
-- with its group's attempt; a retry with the verdict it points at).
CREATE OR REPLACE FUNCTION analytics_unschedulable(p_from timestamptz, p_to timestamptz)
RETURNS TABLE (reason text, resource text, namespace text, attempts bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
WITH edges AS (
    SELECT e.position, e.type, e.data
    FROM events e, analytics_window(p_from, p_to) w
    WHERE e.type IN ('PodGroupUnschedulable', 'PodGroupRetried', 'PodUnschedulable', 'PodRetried')
      AND e.effective_at >= p_from AND e.effective_at < p_to
      AND NOT (e.effective_at >= w.m_lo AND e.effective_at < w.m_hi)
), plain AS (
    SELECT x.* FROM edges x
    WHERE x.type LIKE 'PodGroup%'
       OR NOT EXISTS (
          SELECT 1 FROM object_versions v
          WHERE v.kind = 'Pod' AND v.namespace = split_part(x.data->>'pod', '/', 1)
            AND v.name = split_part(x.data->>'pod', '/', 2) AND v.valid_from < x.position
            AND v.valid_to >= x.position
            AND v.object->'spec'->'schedulingGroup'->>'podGroupName' IS NOT NULL)
), coded AS (
    SELECT split_part(coalesce(p.data->>'group', p.data->>'pod'), '/', 1) AS ns,
           coalesce(d.data->'codes', p.data->'codes') AS codes
    FROM plain p LEFT JOIN events d ON p.type LIKE '%Retried' AND d.position = (p.data->>'diagnosis_position')::bigint
), raw AS (
    SELECT coalesce(codes->>0, 'Unclassified') AS reason,
           coalesce(substring(codes::text FROM 'InsufficientResource\(([^)]*)\)'), '') AS resource,
           ns AS namespace, count(*) AS attempts
    FROM coded GROUP BY 1, 2, 3
)
SELECT reason, resource, namespace, sum(attempts)::bigint
FROM (SELECT * FROM raw UNION ALL SELECT * FROM analytics_bucket_counts('unschedulable', p_from, p_to)) t
    (reason, resource, namespace, attempts)
GROUP BY 1, 2, 3 ORDER BY 4 DESC, 1, 2, 3
$$;

-- Preemptions over any window [p_from, p_to), exact the same way.
CREATE OR REPLACE FUNCTION analytics_preemptions(p_from timestamptz, p_to timestamptz)
RETURNS TABLE (preemptor_namespace text, victim_namespace text, rule text, preemptions bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
WITH raw AS (
    SELECT split_part(e.data->>'preemptor', '/', 1), split_part(e.data->>'victim', '/', 1),
           coalesce(e.data->>'rule', ''), count(*)
    FROM events e, analytics_window(p_from, p_to) w
    WHERE e.type = 'PodPreempted' AND e.effective_at >= p_from AND e.effective_at < p_to
      AND NOT (e.effective_at >= w.m_lo AND e.effective_at < w.m_hi)
    GROUP BY 1, 2, 3
)
SELECT p, v, r, sum(n)::bigint
FROM (SELECT * FROM raw UNION ALL SELECT * FROM analytics_bucket_counts('preemptions', p_from, p_to)) t(p, v, r, n)
GROUP BY 1, 2, 3 ORDER BY 4 DESC, 1, 2, 3
$$;

-- Wait p50/p90 over any window by namespace, quota and priority (exact, every start in it).
CREATE OR REPLACE FUNCTION analytics_waits_between(p_from timestamptz, p_to timestamptz)
RETURNS TABLE (namespace text, quota text, priority int, starts bigint, p50_seconds double precision,
               p90_seconds double precision)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp
AS $$
SELECT namespace, quota, priority, count(*),
       percentile_cont(0.5) WITHIN GROUP (ORDER BY wait_seconds),
       percentile_cont(0.9) WITHIN GROUP (ORDER BY wait_seconds)
FROM v_waits WHERE at >= p_from AND at < p_to
GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
$$;

REVOKE EXECUTE ON FUNCTION analytics_bucket_counts(text, timestamptz, timestamptz) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION analytics_unschedulable(timestamptz, timestamptz),
    analytics_preemptions(timestamptz, timestamptz), analytics_waits_between(timestamptz, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION analytics_unschedulable(timestamptz, timestamptz),
    analytics_preemptions(timestamptz, timestamptz), analytics_waits_between(timestamptz, timestamptz)
    TO podledger_reporting, podledger_app;
GRANT SELECT ON v_unschedulable_hourly, v_preemptions_hourly, v_levels_hourly, v_allocation_hourly,
    v_pending_hourly, v_below_min_hourly, v_waits, v_wait_percentiles_hourly, v_gpu_allocation
    TO podledger_reporting, podledger_app;

-- Node changes (Grafana annotations): every Node created, updated or deleted.
CREATE OR REPLACE VIEW v_node_changes AS
SELECT e.position, e.effective_at AS at, e.type AS change,
       coalesce(e.data->'object'->'metadata'->>'name', e.data->>'name') AS node
FROM events e WHERE e.type IN ('NodeCreated', 'NodeUpdated', 'NodeDeleted');
GRANT SELECT ON v_node_changes TO podledger_reporting, podledger_app;
