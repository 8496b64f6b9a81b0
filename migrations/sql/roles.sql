-- Roles are cluster-wide; create them once. The application role may only INSERT and SELECT
-- events; the reporting role may only SELECT the reporting views (granted where views are made).
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'podledger_app') THEN
    CREATE ROLE podledger_app NOLOGIN;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'podledger_reporting') THEN
    CREATE ROLE podledger_reporting NOLOGIN;
  END IF;
END
$$;
