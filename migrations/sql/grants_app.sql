GRANT USAGE ON SCHEMA public TO podledger_app;
REVOKE ALL ON events FROM podledger_app;
GRANT SELECT, INSERT ON events TO podledger_app;
GRANT SELECT, INSERT, UPDATE ON streams TO podledger_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON objects, projection_checkpoints, event_type_counts TO podledger_app;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO podledger_app;
