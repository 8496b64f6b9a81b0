-- First half of a batched append, in one round trip (the successor of ledger_begin_append,
-- same arguments and results): bump the versions of the batch's streams (the optimistic-
-- concurrency check is done by the caller on the returned versions), bound the transaction's
-- idle time, take the ledger lock, and read the hash-chain head.
--
-- Batches mostly create streams (one per new pod, node, ...): the streams are first inserted
-- by a plain INSERT, as if all were new. An upsert (INSERT ... ON CONFLICT) measured ~3.5 us
-- more per new stream on the server (each row goes through speculative insertion). If any
-- stream exists (or a concurrent transaction created it and committed), the INSERT fails with
-- unique_violation at that stream, its subtransaction is rolled back, and the whole batch is
-- bumped by the upsert instead: the result is always the one the upsert alone gives. In
-- name order the first existing stream stops the INSERT, so a batch of existing streams
-- wastes about one row.
--
-- p_streams must be sorted and free of duplicates (a fixed lock order between batches).
-- The head is read by a separate statement *after* the lock is granted: this function is
-- VOLATILE, so under READ COMMITTED each of its statements takes a fresh snapshot and sees
-- every append that committed while we waited for the lock.
CREATE OR REPLACE FUNCTION ledger_begin_batch(p_streams text[], p_counts int[],
                                              OUT r_streams text[], OUT r_versions int[], OUT r_head bytea)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  BEGIN
    INSERT INTO streams (stream, version) SELECT * FROM unnest(p_streams, p_counts);
    r_streams := p_streams;
    r_versions := p_counts;
  EXCEPTION WHEN unique_violation THEN
    WITH up AS (
      INSERT INTO streams (stream, version) SELECT * FROM unnest(p_streams, p_counts)
      ON CONFLICT (stream) DO UPDATE SET version = streams.version + excluded.version
      RETURNING streams.stream, streams.version
    )
    SELECT array_agg(up.stream), array_agg(up.version) INTO r_streams, r_versions FROM up;
  END;
  -- A transaction holding the ledger lock must not sit idle (migration 0004).
  PERFORM set_config('idle_in_transaction_session_timeout',
                     coalesce(nullif(current_setting('podledger.ledger_idle_timeout', true), ''), '5s'), true);
  PERFORM pg_advisory_xact_lock(7243150001);
  SELECT e.hash INTO r_head FROM events e ORDER BY e.position DESC LIMIT 1;
END
$$;
