-- First half of an append, in one round trip: bump the versions of the batch's streams (the
-- optimistic-concurrency check is done by the caller on the returned versions), bound the
-- transaction's idle time, take the ledger lock, and read the hash-chain head.
--
-- The head is read by a separate statement *after* the lock is granted: this function is
-- VOLATILE, so under READ COMMITTED each of its statements takes a fresh snapshot and sees
-- every append that committed while we waited for the lock.
CREATE OR REPLACE FUNCTION ledger_begin_append(p_streams text[], p_counts int[],
                                               OUT r_streams text[], OUT r_versions int[], OUT r_head bytea)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  WITH up AS (
    INSERT INTO streams (stream, version)
    SELECT s, n FROM unnest(p_streams, p_counts) AS t(s, n) ORDER BY s
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
