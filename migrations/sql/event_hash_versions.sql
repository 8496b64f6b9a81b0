-- Which rule computed the event hash at each position (migration 0024, docs/transparency.md).
-- Each row starts a segment: from first_position on, events are hashed under `version`, until
-- the next segment (the row with the greatest (first_position, id) at or before a position
-- applies; before the first segment, version 1). Version 1 (migrations 0001-0023) hashes
-- stream, version, type, schema version, event id, effective time, data and meta; version 2
-- adds recorded_at. Migration 0024 starts a
-- version-2 segment at the first position drawn after it (a log made before it keeps being
-- verified under the rule its events were hashed with); its downgrade starts a version-1
-- segment and keeps the table, which is part of what makes the log verifiable. Append-only,
-- like the log.
CREATE TABLE IF NOT EXISTS event_hash_versions (
    id             bigint   GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    first_position bigint   NOT NULL CHECK (first_position > 0),
    version        smallint NOT NULL CHECK (version > 0)
);
CREATE OR REPLACE TRIGGER event_hash_versions_no_update BEFORE UPDATE OR DELETE ON event_hash_versions
  FOR EACH ROW EXECUTE FUNCTION ledger_forbid_mutation();
CREATE OR REPLACE TRIGGER event_hash_versions_no_truncate BEFORE TRUNCATE ON event_hash_versions
  FOR EACH STATEMENT EXECUTE FUNCTION ledger_forbid_mutation();
