-- A single-event append in one server call (one round trip; with autocommit, one transaction).
--
-- Steps, in the order the Python path used to take them (ledger/store.py documents why):
-- 1. idempotency: an event id already stored returns its position and appends nothing;
-- 2. bump the stream version (upsert); a mismatch with p_expected (NULL = any) raises LD001
--    (DETAIL = the version found) before the ledger lock is taken, so a loser burns no
--    position and its bump is undone;
-- 3. bound the idle time of this lock-holding transaction and take the ledger lock;
-- 4. read the chain head (a new statement, so its snapshot is taken after the lock);
-- 5. chain link: sha256(prev || len8(header) || header || len8(data) || data || len8(meta) || meta),
--    byte-identical to ledger.canonical.event_hash. The client sends the canonical JSON header
--    split around the version (p_head_pre || version || p_head_post), so no JSON escaping is
--    done in SQL;
-- 6. insert.
CREATE OR REPLACE FUNCTION ledger_append_one(
    p_stream text, p_expected int, p_type text, p_schema_version smallint, p_event_id uuid,
    p_data bytea, p_meta bytea, p_effective_at timestamptz, p_head_pre bytea, p_head_post bytea,
    p_check_id boolean,
    OUT r_position bigint, OUT r_version int, OUT r_existing boolean)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_prev bytea;
  v_header bytea;
  v_hash bytea;
  r_found int;
BEGIN
  r_existing := false;
  IF p_check_id THEN
    SELECT e.position, e.version INTO r_position, r_version FROM events e WHERE e.event_id = p_event_id;
    IF FOUND THEN
      r_existing := true;
      RETURN;
    END IF;
  END IF;
  INSERT INTO streams AS s (stream, version) VALUES (p_stream, 1)
  ON CONFLICT (stream) DO UPDATE SET version = s.version + 1
  RETURNING s.version INTO r_version;
  r_found := r_version - 1;
  IF p_expected IS NOT NULL AND p_expected <> r_found THEN
    -- raising undoes the bump (also in autocommit); the caller maps LD001 to ConcurrencyError
    RAISE EXCEPTION 'stream % is at version %, expected %', p_stream, r_found, p_expected
      USING ERRCODE = 'LD001', DETAIL = r_found::text;
  END IF;
  PERFORM set_config('idle_in_transaction_session_timeout',
                     coalesce(nullif(current_setting('podledger.ledger_idle_timeout', true), ''), '5s'), true);
  PERFORM pg_advisory_xact_lock(7243150001);
  SELECT e.hash INTO v_prev FROM events e ORDER BY e.position DESC LIMIT 1;
  IF v_prev IS NULL THEN
    v_prev := '\x0000000000000000000000000000000000000000000000000000000000000000'::bytea;
  END IF;
  v_header := p_head_pre || convert_to(r_version::text, 'UTF8') || p_head_post;
  v_hash := sha256(v_prev
                   || int8send(length(v_header)::bigint) || v_header
                   || int8send(length(p_data)::bigint) || p_data
                   || int8send(length(p_meta)::bigint) || p_meta);
  INSERT INTO events (stream, version, type, schema_version, event_id, data, meta, effective_at, prev_hash, hash)
  VALUES (p_stream, r_version, p_type, p_schema_version, p_event_id,
          convert_from(p_data, 'UTF8')::jsonb, convert_from(p_meta, 'UTF8')::jsonb,
          p_effective_at, v_prev, v_hash)
  RETURNING position INTO r_position;
END
$$;
