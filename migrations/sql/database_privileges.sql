-- Nothing but the owner may create objects in this database (migration 0024): TEMP (temporary
-- tables, views and functions, which a session searches before every schema unless its
-- search_path names pg_temp) is revoked from PUBLIC, the application and the reporting role,
-- and granted to the owner (the login running the migrations); CREATE on schema public is
-- revoked from them too (PostgreSQL 15 does that for new databases already). Database-level
-- privileges are not copied by CREATE DATABASE ... TEMPLATE, nor kept by every restore:
-- `podledger db roles` reports a role that has TEMP again. Without the rights to change them
-- (not the database's owner) these statements only warn.
DO $$
BEGIN
  EXECUTE format('REVOKE TEMPORARY ON DATABASE %I FROM PUBLIC, podledger_app, podledger_reporting',
                 current_database());
  EXECUTE format('GRANT TEMPORARY ON DATABASE %I TO %I', current_database(), current_user);
  REVOKE CREATE ON SCHEMA public FROM PUBLIC, podledger_app, podledger_reporting;
END
$$;
