-- What the application login may write (migration 0024, docs/transparency.md):
-- - events: INSERT of the columns an append sets, not position (drawn from the sequence under
--   the ledger lock, so a row can never be slipped before the head) nor tx_id (the server's);
-- - the Merkle tree and the checkpoints: nothing directly; ledger_extend_tree and
--   ledger_store_checkpoint (SECURITY DEFINER, search_path pinned) store only what they
--   computed or checked against the log;
-- - event_hash_versions: read only.
REVOKE INSERT ON events FROM podledger_app;
GRANT INSERT (stream, version, type, schema_version, event_id, data, meta, recorded_at, effective_at,
              prev_hash, hash) ON events TO podledger_app;
REVOKE ALL ON merkle_leaves, merkle_nodes, checkpoints FROM podledger_app, PUBLIC;
GRANT SELECT ON merkle_leaves, merkle_nodes, checkpoints TO podledger_app;
REVOKE ALL ON SEQUENCE checkpoints_id_seq FROM podledger_app, PUBLIC;
REVOKE ALL ON event_hash_versions FROM podledger_app, podledger_reporting, PUBLIC;
GRANT SELECT ON event_hash_versions TO podledger_app;
REVOKE ALL ON SEQUENCE event_hash_versions_id_seq FROM podledger_app, podledger_reporting, PUBLIC;
REVOKE EXECUTE ON FUNCTION ledger_extend_tree(bigint, bigint),
    ledger_store_checkpoint(text, bigint, bytea, text, text), ledger_tree_root(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger_extend_tree(bigint, bigint),
    ledger_store_checkpoint(text, bigint, bytea, text, text), ledger_tree_root(bigint) TO podledger_app;
