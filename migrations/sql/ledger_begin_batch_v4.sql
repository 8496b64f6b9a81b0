-- First half of a batched append, in one round trip (migration 0024; same arguments and results
-- as migrations 0010, 0020 and 0021): bump the versions of the batch's streams (the optimistic-
-- concurrency check is done by the caller on the returned versions), bound the transaction's
-- idle time, take the ledger lock, and read the hash-chain head. New in 0024: when every
-- partition was detached, the head is the hash recorded for the last detached event (the link
-- the insert trigger, migrations/sql/ledger_record_event_keys_v2.sql, requires).
--
-- Batches of new streams (one per new pod, node, ...) are bumped by a plain INSERT: the upsert
-- (INSERT ... ON CONFLICT) costs about twice as much per new row on the server (each row goes
-- through speculative insertion: a conflict probe, the heap insert, the index insert and the
-- speculative-insert confirmation). Whether any stream of the batch exists is read first by one
-- index scan over the sorted names (~0.5 us per stream): if none does, the INSERT runs in a
-- subtransaction; if a concurrent transaction created one of them meanwhile and committed, the
-- INSERT fails with unique_violation, its subtransaction is rolled back and the upsert runs, as
-- it does whenever a stream exists (migration 0010 tried the INSERT blindly, so batches of
-- existing streams paid for a failed INSERT and its rollback first). Either way the result is
-- the one the upsert alone gives, and rows are written and locked in the order of p_streams.
--
-- p_streams must be sorted and free of duplicates (a fixed lock order between batches).
-- The head is read by a separate statement *after* the lock is granted: this function is
-- VOLATILE, so under READ COMMITTED each of its statements takes a fresh snapshot and sees
-- every append that committed while we waited for the lock. Sequential scans are disabled
-- (migration 0019): the head read must stay a backward scan of the primary-key indexes, and
-- the existence probe an index scan.
CREATE OR REPLACE FUNCTION ledger_begin_batch(p_streams text[], p_counts int[],
                                              OUT r_streams text[], OUT r_versions int[], OUT r_head bytea)
LANGUAGE plpgsql VOLATILE SET enable_seqscan = off AS $$
BEGIN
  IF NOT EXISTS (SELECT FROM streams s WHERE s.stream = ANY(p_streams)) THEN
    BEGIN
      INSERT INTO streams (stream, version) SELECT * FROM unnest(p_streams, p_counts);
      r_streams := p_streams;
      r_versions := p_counts;
    EXCEPTION WHEN unique_violation THEN
      r_streams := NULL;  -- created concurrently: the upsert below
    END;
  END IF;
  IF r_streams IS NULL THEN
    WITH up AS (
      INSERT INTO streams (stream, version) SELECT * FROM unnest(p_streams, p_counts)
      ON CONFLICT (stream) DO UPDATE SET version = streams.version + excluded.version
      RETURNING streams.stream, streams.version
    )
    SELECT array_agg(up.stream), array_agg(up.version) INTO r_streams, r_versions FROM up;
  END IF;
  -- A transaction holding the ledger lock must not sit idle (migration 0004).
  PERFORM set_config('idle_in_transaction_session_timeout',
                     coalesce(nullif(current_setting('podledger.ledger_idle_timeout', true), ''), '5s'), true);
  PERFORM pg_advisory_xact_lock(7243150001);
  SELECT e.hash INTO r_head FROM events e ORDER BY e.position DESC LIMIT 1;
  IF r_head IS NULL THEN  -- every partition detached: the chain goes on from the last detached event
    SELECT d.last_hash INTO r_head FROM event_archive.detached d ORDER BY d.hi DESC LIMIT 1;
  END IF;
END
$$;
