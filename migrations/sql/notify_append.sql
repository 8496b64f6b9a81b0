-- Wake listeners after an append. Notifications are delivered at commit and are only a hint:
-- listeners always catch up by reading positions, and poll as a fallback.
CREATE OR REPLACE FUNCTION ledger_notify_append() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('podledger_events', (SELECT max(position) FROM events)::text);
  RETURN NULL;
END
$$;
