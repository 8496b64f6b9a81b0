-- The read every apply/delete request starts with (migration 0022; api/services/objects.py
-- _DbState): for each requested key its stored manifest (NULL: none) and its stream's version
-- (0: none), plus every object of p_preloaded (stream and version NULL). p_keys is a JSON
-- array of {"k": kind, "n": namespace, "m": name, "s": stream}.
--
-- Why a function: as a statement with array parameters the read was planned on every call
-- (a custom plan knows the arrays' lengths, so PostgreSQL never settled on the generic one):
-- 0.18 ms of planning per request, four times its execution. Here the query is planned once
-- per session (plan_cache_mode = force_generic_plan), and the plan is pinned to the one that
-- is right at every table size: a nested loop of primary-key probes per key. Sequential
-- scans, hash and merge joins are disabled, because a plan made while the tables are empty or
-- small (a new ledger, the template a simulation copies) would otherwise scan them whole and
-- keep doing so as they grow (migration 0019's lesson).
CREATE OR REPLACE FUNCTION ledger_admission_read(p_keys jsonb, p_preloaded text)
RETURNS TABLE (r_kind text, r_namespace text, r_name text, r_object text, r_stream text, r_version integer)
LANGUAGE plpgsql STABLE
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
  RETURN QUERY
    SELECT q.k, q.n, q.m, o.object::text, q.s, coalesce(st.version, 0)
    FROM jsonb_to_recordset(p_keys) AS q(k text, n text, m text, s text)
    LEFT JOIN objects o ON o.kind = q.k AND o.namespace = q.n AND o.name = q.m
    LEFT JOIN streams st ON st.stream = q.s
    UNION ALL
    -- COLLATE: a PL/pgSQL parameter takes the call's input collation, and the comparison with
    -- it matched no index (the generic plan scanned objects); the column's collation is pinned
    SELECT o.kind, o.namespace, o.name, o.object::text, NULL, NULL
    FROM objects o WHERE o.kind = p_preloaded COLLATE "default";
END
$$;
