-- The read of the inline projection's write (migration 0022; ledger/projections/current.py
-- project): the current rows of the objects a batch of events touches and the latest quota
-- usage of the namespaces whose pods it touches, as two JSON documents in one row:
-- r_rows = [[kind, namespace, name, uid, object, status, created_position, updated_position,
-- created_at, updated_at], ...], r_usage = [[namespace, used], ...] (NULL when empty).
-- p_keys is a JSON array of [kind, namespace, name], p_namespaces a JSON array of names.
--
-- As statements with array parameters both reads were planned on every call (~0.15 ms per
-- write, more than their execution). Here each is planned once per session, and the plans are
-- pinned to primary-key probes (sequential scans, hash and merge joins disabled) so that a
-- plan made on an empty ledger stays right on a large one (migration 0019's lesson).
CREATE OR REPLACE FUNCTION ledger_projection_read(p_keys jsonb, p_namespaces jsonb,
                                                  OUT r_rows text, OUT r_usage text)
LANGUAGE plpgsql STABLE
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
  SELECT json_agg(json_build_array(o.kind, o.namespace, o.name, o.uid, o.object, o.status,
                                   o.created_position, o.updated_position, o.created_at, o.updated_at))::text
  INTO r_rows
  FROM jsonb_array_elements(p_keys) AS q(key)
  JOIN objects o ON o.kind = (q.key->>0) AND o.namespace = (q.key->>1) AND o.name = (q.key->>2);
  SELECT json_agg(json_build_array(n.ns, u.used))::text
  INTO r_usage
  FROM jsonb_array_elements_text(p_namespaces) AS n(ns)
  CROSS JOIN LATERAL (
    SELECT qu.used FROM quota_usage qu WHERE qu.namespace = n.ns ORDER BY qu.valid_from DESC LIMIT 1
  ) AS u;
END
$$;
