-- The projection as of a position without a temporary view (migration 0024; the application
-- role has no TEMP any more): ledger.queries.state.objects_at sets, for its transaction only,
-- podledger.as_of_position and a search_path that names this schema first, so every query of
-- ledger/queries that reads `objects` reads this view over the temporal projection instead.
-- current_setting is stable: the planner estimates the bounds with the position's value, and
-- the index scans use it as a key, as they did with the literal of the temporary view.
CREATE SCHEMA IF NOT EXISTS podledger_as_of;
CREATE OR REPLACE VIEW podledger_as_of.objects AS
  SELECT kind, namespace, name, uid, object, status, created_position, valid_from AS updated_position,
         created_at, updated_at
  FROM public.object_versions
  WHERE valid_from <= current_setting('podledger.as_of_position')::bigint
    AND valid_to > current_setting('podledger.as_of_position')::bigint;
GRANT USAGE ON SCHEMA podledger_as_of TO podledger_app;
GRANT SELECT ON podledger_as_of.objects TO podledger_app;
