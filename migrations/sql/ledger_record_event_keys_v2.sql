-- Insert-time checks of the log (migration 0024, docs/transparency.md "What the database
-- refuses"), run once per INSERT or COPY statement on events (AFTER ... FOR EACH STATEMENT,
-- transition table new_events) by the owner (SECURITY DEFINER: the application may read
-- event_keys, not write it). Whoever inserts, through whichever path, a row is refused unless:
--
-- 1. its event id and its (stream, version) are new (event_keys' unique constraints, named
--    events_event_id_key and events_stream_version_key as before migration 0016), and its
--    version is 1 or the successor of a stored version of its stream (no gap, no duplicate);
-- 2. it comes after every stored event (no row is slipped in before the head), and its
--    prev_hash is the hash of the event at the previous position (for the first row of the
--    statement, the newest stored event, or the last detached one, or 32 zero bytes);
-- 3. its hashes are 32 bytes and its recorded_at is the server's time within this transaction
--    (between its start and now): recorded_at is part of the event hash (hash version 2), the
--    application cannot choose it.
--
-- The content of the hash (sha256 over canonical JSON made by the client) is not recomputed
-- here: the database stores jsonb, not the canonical bytes. `podledger verify` and every
-- checkpoint recompute it.
--
-- search_path is pinned with pg_temp last: a temporary table named event_keys or events in the
-- caller's session is never used by this function. Sequential scans, hash and merge joins are
-- off: every look-up is an index probe per new row (a hashed anti-join would read all of
-- event_keys on every append), and the head reads stay backward index scans (migration 0019).
CREATE OR REPLACE FUNCTION ledger_record_event_keys() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
  v_first bigint;
  v_last bigint;
  v_n bigint;
  v_head bigint;
  v_prev bytea;
  v_bad record;
BEGIN
  INSERT INTO event_keys (event_id, stream, version, position)
  SELECT n.event_id, n.stream, n.version, n.position FROM new_events n;

  SELECT min(n.position), max(n.position), count(*) INTO v_first, v_last, v_n FROM new_events n;
  IF v_n = 0 THEN
    RETURN NULL;
  END IF;
  SELECT e.position INTO v_head FROM events e ORDER BY e.position DESC LIMIT 1;
  IF v_head <> v_last
     OR (v_last - v_first + 1 <> v_n
         AND (SELECT count(*) FROM events e WHERE e.position BETWEEN v_first AND v_last) <> v_n) THEN
    RAISE EXCEPTION 'events refused: position % is not after every stored event', v_first
      USING ERRCODE = 'check_violation';
  END IF;
  SELECT e.hash INTO v_prev FROM events e WHERE e.position < v_first ORDER BY e.position DESC LIMIT 1;
  IF v_prev IS NULL THEN
    SELECT d.last_hash INTO v_prev FROM event_archive.detached d ORDER BY d.hi DESC LIMIT 1;
  END IF;
  v_prev := coalesce(v_prev, '\x0000000000000000000000000000000000000000000000000000000000000000'::bytea);

  SELECT c.position, c.stream, c.version,
         CASE
           WHEN c.prev_hash IS DISTINCT FROM coalesce(c.link, v_prev)
             THEN 'prev_hash is not the hash of the event before it'
           WHEN octet_length(c.hash) <> 32 THEN 'hash is not 32 bytes'
           ELSE 'recorded_at is not the server''s time of this transaction'
         END AS why
  INTO v_bad
  FROM (SELECT n.position, n.stream, n.version, n.prev_hash, n.hash, n.recorded_at,
               lag(n.hash) OVER (ORDER BY n.position) AS link
        FROM new_events n) c
  WHERE c.prev_hash IS DISTINCT FROM coalesce(c.link, v_prev)
     OR octet_length(c.hash) <> 32
     OR c.recorded_at < now() OR c.recorded_at > clock_timestamp()
  ORDER BY c.position
  LIMIT 1;
  IF NOT FOUND THEN
    SELECT n.position, n.stream, n.version,
           'version is neither 1 nor the successor of a stored version of its stream' AS why
    INTO v_bad
    FROM new_events n
    WHERE n.version > 1
      AND NOT EXISTS (SELECT 1 FROM event_keys k WHERE k.stream = n.stream AND k.version = n.version - 1)
    ORDER BY n.position
    LIMIT 1;
  END IF;
  IF FOUND THEN
    RAISE EXCEPTION 'event refused at position % (stream %, version %): %',
      v_bad.position, v_bad.stream, v_bad.version, v_bad.why
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NULL;
END
$$;
