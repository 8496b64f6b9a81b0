-- The input events of a range of the log that explain and history list as "what changed since
-- the last attempt" (migration 0023; ledger/queries/inputs.py input_changes): created, updated
-- and deleted events in positions (p_after, p_upto] of the input streams whose names match one
-- of p_prefixes (LIKE patterns), and of the streams p_streams (a group's own spec).
--
-- As a statement it was planned on every call (1.4 ms of planning on a 1M-event log with its
-- partitions, ten times its execution, the largest single cost of a live explain). Here it is
-- planned once per session (plan_cache_mode = force_generic_plan) and the plan is pinned to the
-- partial index of input events and event_keys' (stream, version) index with primary-key
-- probes: sequential scans, hash and merge joins are disabled, so that a plan made while the
-- tables are empty stays right once they are large (migration 0019's lesson). The repeated
-- stream pattern is the predicate of events_input_position_idx (migration 0017), word for word.
CREATE OR REPLACE FUNCTION ledger_input_changes(p_after bigint, p_upto bigint, p_prefixes text[],
                                                p_streams text[])
RETURNS TABLE (r_position bigint, r_type text, r_stream text, r_effective_at timestamptz)
LANGUAGE plpgsql STABLE
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
  RETURN QUERY
    SELECT e.position, e.type, e.stream, e.effective_at FROM events e
    WHERE e.position > p_after AND e.position <= p_upto
      AND e.stream ~ '^(elasticquota|elasticquotatree|node|poddisruptionbudget|priorityclass)/'
      AND e.stream LIKE ANY(p_prefixes) AND e.type ~ '(Created|Updated|Deleted)$'
    UNION
    SELECT e.position, e.type, e.stream, e.effective_at FROM events e
    WHERE e.position > p_after AND e.position <= p_upto
      AND e.position IN (
        -- COLLATE: the column's collation pinned, as in migration 0022 (where a PL/pgSQL
        -- parameter's collation, taken from the call, matched no index)
        SELECT k.position FROM event_keys k
        WHERE k.stream = ANY(p_streams COLLATE "default") AND k.position > p_after AND k.position <= p_upto)
      AND e.type ~ '(Created|Updated|Deleted)$'
    ORDER BY 1;
END
$$;
