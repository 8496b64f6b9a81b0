-- Partitioned log (migration 0016, ledger/partitions.py, docs/operations.md): `events` is
-- PARTITION BY RANGE (position). Partitions are named events_p<lower bound>; a DEFAULT
-- partition (events_default) takes any row beyond the last range partition, so an append never
-- fails for want of a partition, and ledger_ensure_partitions folds such rows into a range
-- partition (the rows are moved by re-attaching the table, never deleted: the log stays
-- append-only). Detached partitions are recorded in event_archive.detached and, when archived,
-- kept as tables of the schema event_archive.

-- The range partitions of events (and the default one) read from the catalog.
CREATE OR REPLACE FUNCTION ledger_event_partitions(OUT name text, OUT lo bigint, OUT hi bigint,
                                                   OUT is_default boolean)
RETURNS SETOF record
LANGUAGE sql STABLE AS $$
  SELECT c.relname::text,
         (regexp_match(b.expr, 'FROM \(''?(-?[0-9]+)''?\)'))[1]::bigint,
         (regexp_match(b.expr, 'TO \(''?(-?[0-9]+)''?\)'))[1]::bigint,
         b.expr = 'DEFAULT'
  FROM pg_inherits i
  JOIN pg_class c ON c.oid = i.inhrelid
  CROSS JOIN LATERAL (SELECT pg_get_expr(c.relpartbound, c.oid) AS expr) b
  WHERE i.inhparent = 'events'::regclass
  ORDER BY 4, 2
$$;

-- A new range partition [p_lo, p_hi) with the TRUNCATE guard (statement triggers are not
-- cloned to partitions; the row triggers and the indexes are).
CREATE OR REPLACE FUNCTION ledger_create_partition(p_lo bigint, p_hi bigint) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  v_name text := 'events_p' || p_lo;
BEGIN
  EXECUTE format('CREATE TABLE %I PARTITION OF events FOR VALUES FROM (%s) TO (%s)', v_name, p_lo, p_hi);
  EXECUTE format('CREATE TRIGGER events_partition_no_truncate BEFORE TRUNCATE ON %I '
                 'FOR EACH STATEMENT EXECUTE FUNCTION ledger_forbid_mutation()', v_name);
  RETURN v_name;
END
$$;

-- The newest position drawn (committed or not): the log's head or the sequence, whichever is
-- further (a rolled-back append burns positions).
CREATE OR REPLACE FUNCTION ledger_position_drawn() RETURNS bigint
LANGUAGE sql STABLE AS $$
  SELECT greatest(
    coalesce((SELECT position FROM events ORDER BY position DESC LIMIT 1), 0),
    coalesce(pg_sequence_last_value(pg_get_serial_sequence('events', 'position')::regclass), 0),
    coalesce((SELECT max(hi) - 1 FROM event_archive.detached), 0))
$$;

-- Keep p_ahead empty range partitions after the one holding the newest position, each p_size
-- positions long (NULL: the size of the newest partition, else 1,000,000), and fold rows that
-- landed in the default partition into a range partition. Returns the partitions created.
-- Cheap when nothing is to do (catalog reads and two index probes, no lock beyond reading).
-- DDL waits at most podledger.partition_lock_timeout (default 2s) for the table lock: a long
-- reader then makes this call fail instead of queueing every append behind it; the worker tries
-- again at its next check. SECURITY DEFINER: the worker (podledger_app) may call it, the DDL
-- runs as the owner.
CREATE OR REPLACE FUNCTION ledger_ensure_partitions(p_ahead int DEFAULT 2, p_size bigint DEFAULT NULL)
RETURNS SETOF text
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
  v_size bigint := p_size;
  v_last_hi bigint;
  v_head bigint;
  v_def_max bigint;
  v_name text;
  v_new_hi bigint;
  v_locked boolean := false;
BEGIN
  IF p_ahead < 0 OR (p_size IS NOT NULL AND p_size < 1) THEN
    RAISE EXCEPTION 'ledger_ensure_partitions: ahead must be >= 0 and size >= 1';
  END IF;
  LOOP
    SELECT max(p.hi) INTO v_last_hi FROM ledger_event_partitions() p WHERE NOT p.is_default;
    v_last_hi := greatest(v_last_hi, (SELECT max(d.hi) FROM event_archive.detached d), 0);
    IF v_size IS NULL THEN
      SELECT p.hi - p.lo INTO v_size FROM ledger_event_partitions() p WHERE NOT p.is_default
      ORDER BY p.lo DESC LIMIT 1;
      v_size := coalesce(v_size, 1000000);
    END IF;
    v_head := ledger_position_drawn();
    SELECT e.position INTO v_def_max FROM events e WHERE e.position >= v_last_hi
    ORDER BY e.position DESC LIMIT 1;
    EXIT WHEN v_def_max IS NULL AND v_last_hi > v_head + p_ahead * v_size;
    IF NOT v_locked THEN
      -- the ledger lock is NOT taken: an append holding it may still need the table lock
      PERFORM set_config('lock_timeout',
                         coalesce(nullif(current_setting('podledger.partition_lock_timeout', true), ''), '2s'),
                         true);
      LOCK TABLE events IN ACCESS EXCLUSIVE MODE;
      v_locked := true;
      CONTINUE;  -- read the bounds again under the lock
    END IF;
    IF v_def_max IS NOT NULL THEN
      -- rows past the last range partition: the default partition becomes that range's
      -- partition (re-attached, no row moves), and a new empty default partition is made
      v_new_hi := v_last_hi + ((v_def_max - v_last_hi) / v_size + 1) * v_size;
      v_name := 'events_p' || v_last_hi;
      ALTER TABLE events DETACH PARTITION events_default;
      PERFORM ledger_drop_cloned_triggers('events_default');
      EXECUTE format('ALTER TABLE events_default RENAME TO %I', v_name);
      EXECUTE format('ALTER TABLE %I ALTER COLUMN position DROP IDENTITY IF EXISTS', v_name);
      EXECUTE format('ALTER TABLE events ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)',
                     v_name, v_last_hi, v_new_hi);
      CREATE TABLE events_default PARTITION OF events DEFAULT;
      CREATE TRIGGER events_partition_no_truncate BEFORE TRUNCATE ON events_default
        FOR EACH STATEMENT EXECUTE FUNCTION ledger_forbid_mutation();
      RETURN NEXT v_name;
    ELSE
      RETURN NEXT ledger_create_partition(v_last_hi, v_last_hi + v_size);
    END IF;
  END LOOP;
END
$$;

-- A detached partition keeps no trigger cloned from events (the server drops them on detach;
-- this is the belt to those braces, so that a re-attach can clone them again).
CREATE OR REPLACE FUNCTION ledger_drop_cloned_triggers(p_table text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  v_trig text;
BEGIN
  FOR v_trig IN
    SELECT t.tgname FROM pg_trigger t
    WHERE t.tgrelid = p_table::regclass AND NOT t.tgisinternal
      AND t.tgname IN (SELECT pt.tgname FROM pg_trigger pt
                       WHERE pt.tgrelid = 'events'::regclass AND NOT pt.tgisinternal
                         AND (pt.tgtype & 1) = 1)  -- row-level triggers of the parent
  LOOP
    EXECUTE format('DROP TRIGGER %I ON %I', v_trig, p_table);
  END LOOP;
END
$$;

-- Detach every range partition that lies wholly before p_before and holds no position after
-- the log's head (the oldest first, so what stays is a suffix of the log). Each is recorded in
-- event_archive.detached with the hash of its last event (the link the first retained event
-- must carry: `podledger verify` starts there) and is then moved to the schema event_archive
-- (p_archive) or dropped. event_keys keeps the detached events' ids and stream versions, so an
-- old event id is still refused and stream versions keep counting. Run by the owner.
CREATE OR REPLACE FUNCTION ledger_detach_partitions(p_before bigint, p_archive boolean)
RETURNS TABLE (name text, lo bigint, hi bigint, events bigint)
LANGUAGE plpgsql AS $$
DECLARE
  v_head bigint;
  v_part record;
  v_last_pos bigint;
  v_last_hash bytea;
  v_first bigint;
  v_count bigint;
BEGIN
  PERFORM set_config('lock_timeout',
                     coalesce(nullif(current_setting('podledger.partition_lock_timeout', true), ''), '5s'),
                     true);
  LOCK TABLE events IN ACCESS EXCLUSIVE MODE;  -- no append is in flight from here on
  v_head := ledger_position_drawn();
  FOR v_part IN
    SELECT p.name, p.lo, p.hi FROM ledger_event_partitions() p
    WHERE NOT p.is_default AND p.hi <= p_before AND p.hi <= v_head + 1
    ORDER BY p.lo
  LOOP
    EXECUTE format('SELECT count(*), min(position) FROM %I', v_part.name) INTO v_count, v_first;
    SELECT e.position, e.hash INTO v_last_pos, v_last_hash FROM events e
    WHERE e.position < v_part.hi ORDER BY e.position DESC LIMIT 1;
    IF v_last_pos IS NULL THEN  -- an empty partition: the link is the previous detachment's
      SELECT d.last_position, d.last_hash INTO v_last_pos, v_last_hash FROM event_archive.detached d
      ORDER BY d.hi DESC LIMIT 1;
    END IF;
    -- anchored history in use (migration 0007): its tree must already hold these events, since
    -- extending it reads the event of its last leaf
    IF EXISTS (SELECT 1 FROM merkle_leaves)
       AND (SELECT max(l.position) FROM merkle_leaves l) < coalesce(v_last_pos, 0) THEN
      RAISE EXCEPTION 'the Merkle tree does not reach position % yet: run `podledger checkpoint` before detaching',
        v_last_pos USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    EXECUTE format('ALTER TABLE events DETACH PARTITION %I', v_part.name);
    PERFORM ledger_drop_cloned_triggers(v_part.name);
    IF p_archive THEN
      EXECUTE format('ALTER TABLE %I SET SCHEMA event_archive', v_part.name);
      EXECUTE format('CREATE TRIGGER events_no_update BEFORE UPDATE OR DELETE ON event_archive.%I '
                     'FOR EACH ROW EXECUTE FUNCTION ledger_forbid_mutation()', v_part.name);
      -- `podledger verify --archive` (the application login) reads it
      EXECUTE format('GRANT SELECT ON event_archive.%I TO podledger_app', v_part.name);
    ELSE
      EXECUTE format('DROP TABLE %I', v_part.name);
    END IF;
    INSERT INTO event_archive.detached (name, lo, hi, events, first_position, last_position, last_hash, archived)
    VALUES (v_part.name, v_part.lo, v_part.hi, v_count, v_first, v_last_pos, v_last_hash, p_archive);
    name := v_part.name; lo := v_part.lo; hi := v_part.hi; events := v_count;
    RETURN NEXT;
  END LOOP;
END
$$;

-- event_keys: the global uniqueness of event ids and stream versions (a unique index on a
-- partitioned table must contain the partition key), filled in the same statement as the
-- insert into events. SECURITY DEFINER: the application may read event_keys, not write it.
CREATE OR REPLACE FUNCTION ledger_record_event_keys() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
  INSERT INTO event_keys (event_id, stream, version, position)
  SELECT n.event_id, n.stream, n.version, n.position FROM new_events n;
  RETURN NULL;
END
$$;
