-- First half of a batched append, in one round trip (migration 0020; same arguments and results
-- as migration 0010's version): bump the versions of the batch's streams (the optimistic-
-- concurrency check is done by the caller on the returned versions), bound the transaction's
-- idle time, take the ledger lock, and read the hash-chain head.
--
-- The streams are bumped by a single upsert. Migration 0010 first tried a plain INSERT in a
-- subtransaction (~3.5 us per new stream cheaper) and fell back to the upsert on
-- unique_violation; in a replay most batches bump existing streams, so most calls paid for the
-- subtransaction, the failed INSERT and its rollback, then the upsert anyway.
--
-- p_streams must be sorted and free of duplicates (a fixed lock order between batches).
-- The head is read by a separate statement *after* the lock is granted: this function is
-- VOLATILE, so under READ COMMITTED each of its statements takes a fresh snapshot and sees
-- every append that committed while we waited for the lock. Sequential scans are disabled
-- (migration 0019): the head read must stay a backward scan of the primary-key indexes.
CREATE OR REPLACE FUNCTION ledger_begin_batch(p_streams text[], p_counts int[],
                                              OUT r_streams text[], OUT r_versions int[], OUT r_head bytea)
LANGUAGE plpgsql VOLATILE SET enable_seqscan = off AS $$
BEGIN
  WITH up AS (
    INSERT INTO streams (stream, version) SELECT * FROM unnest(p_streams, p_counts)
    ON CONFLICT (stream) DO UPDATE SET version = streams.version + excluded.version
    RETURNING streams.stream, streams.version
  )
  SELECT array_agg(up.stream), array_agg(up.version) INTO r_streams, r_versions FROM up;
  -- A transaction holding the ledger lock must not sit idle (migration 0004).
  PERFORM set_config('idle_in_transaction_session_timeout',
                     coalesce(nullif(current_setting('podledger.ledger_idle_timeout', true), ''), '5s'), true);
  PERFORM pg_advisory_xact_lock(7243150001);
  SELECT e.hash INTO r_head FROM events e ORDER BY e.position DESC LIMIT 1;
END
$$;
