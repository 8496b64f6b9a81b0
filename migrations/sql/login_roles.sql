-- Least privilege: the application and the worker log in as podledger_app (no longer a
-- superuser that runs SET ROLE, which RESET ROLE undid); reporting tools log in as
-- podledger_reporting. Neither may create roles or databases, bypass row security or replicate;
-- only the owner (the login that runs the migrations) owns the tables and their triggers.
-- Passwords are set outside the migrations (`podledger db roles --set-passwords`, or the
-- deployment's init script). Changing roles needs CREATEROLE: without it this is a notice.
DO $$
BEGIN
  ALTER ROLE podledger_app LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
  ALTER ROLE podledger_reporting LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
EXCEPTION WHEN insufficient_privilege THEN
  RAISE NOTICE 'podledger: cannot alter the login roles (%); a role admin must run: '
    'ALTER ROLE podledger_app LOGIN; ALTER ROLE podledger_reporting LOGIN', SQLERRM;
END
$$;
-- INSERT and SELECT on the log, nothing else: no UPDATE, DELETE, TRUNCATE, REFERENCES or TRIGGER.
REVOKE ALL ON events FROM podledger_app, podledger_reporting, PUBLIC;
GRANT SELECT, INSERT ON events TO podledger_app;
-- /readyz compares the schema version with the code's; the application login reads it.
GRANT SELECT ON alembic_version TO podledger_app;
