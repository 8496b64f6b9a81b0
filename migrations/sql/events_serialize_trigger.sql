CREATE TRIGGER events_serialize BEFORE INSERT ON events
  FOR EACH STATEMENT EXECUTE FUNCTION ledger_serialize_appends();
