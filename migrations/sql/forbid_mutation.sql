-- The log is append-only: UPDATE, DELETE and TRUNCATE raise. (A superuser can still bypass
-- triggers with session_replication_role = replica; `podledger verify` detects what that does.)
CREATE OR REPLACE FUNCTION ledger_forbid_mutation() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'events are immutable: % on events is not allowed', TG_OP
    USING ERRCODE = 'insufficient_privilege';
END
$$;
