-- A single-event append in one server call (one round trip; with autocommit, one transaction).
-- Hash version 2 (migration 0024): the event hash covers recorded_at too, taken from the
-- server's clock once the ledger lock is held (so recorded_at follows position order).
--
-- Steps, in the order the Python path used to take them (ledger/store.py documents why):
-- 1. idempotency: an event id already stored (event_keys: archived events too) returns its
--    position and appends nothing;
-- 2. bump the stream version (upsert); a mismatch with p_expected (NULL = any) raises LD001
--    (DETAIL = the version found) before the ledger lock is taken, so a loser burns no
--    position and its bump is undone;
-- 3. bound the idle time of this lock-holding transaction and take the ledger lock;
-- 4. read the chain head (a new statement, so its snapshot is taken after the lock); after
--    every partition was detached, the hash recorded for the last detached event;
-- 5. chain link: sha256(prev || len8(header) || header || len8(data) || data || len8(meta) || meta),
--    byte-identical to ledger.canonical.event_hash with recorded_at. The client sends the
--    canonical JSON header of hash version 1 split around the version
--    (p_head_pre || version || p_head_post, p_head_post ending in ']'); the server appends
--    recorded_at as the header's last element, so no JSON escaping is done in SQL;
-- 6. insert.
-- Sequential scans are disabled (migration 0019): the head read stays a backward index scan.
CREATE OR REPLACE FUNCTION ledger_append_one(
    p_stream text, p_expected int, p_type text, p_schema_version smallint, p_event_id uuid,
    p_data bytea, p_meta bytea, p_effective_at timestamptz, p_head_pre bytea, p_head_post bytea,
    p_check_id boolean,
    OUT r_position bigint, OUT r_version int, OUT r_existing boolean)
LANGUAGE plpgsql VOLATILE SET enable_seqscan = off AS $$
DECLARE
  v_prev bytea;
  v_header bytea;
  v_hash bytea;
  v_recorded timestamptz;
  r_found int;
BEGIN
  r_existing := false;
  IF p_check_id THEN
    SELECT e.position, e.version INTO r_position, r_version FROM event_keys e WHERE e.event_id = p_event_id;
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
    SELECT d.last_hash INTO v_prev FROM event_archive.detached d ORDER BY d.hi DESC LIMIT 1;
    v_prev := coalesce(v_prev, '\x0000000000000000000000000000000000000000000000000000000000000000'::bytea);
  END IF;
  v_recorded := clock_timestamp();
  v_header := p_head_pre || convert_to(r_version::text, 'UTF8')
              || substring(p_head_post FROM 1 FOR octet_length(p_head_post) - 1)
              || convert_to(',"' || to_char(v_recorded AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') || '"]',
                            'UTF8');
  v_hash := sha256(v_prev
                   || int8send(length(v_header)::bigint) || v_header
                   || int8send(length(p_data)::bigint) || p_data
                   || int8send(length(p_meta)::bigint) || p_meta);
  INSERT INTO events (stream, version, type, schema_version, event_id, data, meta, recorded_at, effective_at,
                      prev_hash, hash)
  VALUES (p_stream, r_version, p_type, p_schema_version, p_event_id,
          convert_from(p_data, 'UTF8')::jsonb, convert_from(p_meta, 'UTF8')::jsonb,
          v_recorded, p_effective_at, v_prev, v_hash)
  RETURNING position INTO r_position;
END
$$;
