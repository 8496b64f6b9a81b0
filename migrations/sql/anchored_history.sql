-- Anchored history (ledger/anchor.py): the Merkle tree over the events and the signed
-- checkpoints. All three tables are append-only like the log; the tree state is only a cache
-- (`podledger verify --checkpoint` recomputes everything from the events).
CREATE TABLE merkle_leaves (
    idx      bigint PRIMARY KEY CHECK (idx >= 0),
    position bigint NOT NULL UNIQUE,
    hash     bytea  NOT NULL CHECK (octet_length(hash) = 32)
);
CREATE TABLE merkle_nodes (
    level smallint NOT NULL CHECK (level > 0),
    idx   bigint   NOT NULL CHECK (idx >= 0),
    hash  bytea    NOT NULL CHECK (octet_length(hash) = 32),
    PRIMARY KEY (level, idx)
);
CREATE TABLE checkpoints (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    origin     text        NOT NULL,
    tree_size  bigint      NOT NULL CHECK (tree_size >= 0),
    root       bytea       NOT NULL CHECK (octet_length(root) = 32),
    key_name   text        NOT NULL,
    note       text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX checkpoints_size_idx ON checkpoints (tree_size, id);

CREATE OR REPLACE FUNCTION ledger_forbid_anchor_mutation() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% is append-only: % is not allowed', TG_TABLE_NAME, TG_OP
    USING ERRCODE = 'insufficient_privilege';
END
$$;
CREATE TRIGGER merkle_leaves_append_only BEFORE UPDATE OR DELETE ON merkle_leaves
  FOR EACH ROW EXECUTE FUNCTION ledger_forbid_anchor_mutation();
CREATE TRIGGER merkle_nodes_append_only BEFORE UPDATE OR DELETE ON merkle_nodes
  FOR EACH ROW EXECUTE FUNCTION ledger_forbid_anchor_mutation();
CREATE TRIGGER checkpoints_append_only BEFORE UPDATE OR DELETE ON checkpoints
  FOR EACH ROW EXECUTE FUNCTION ledger_forbid_anchor_mutation();
CREATE TRIGGER anchor_no_truncate BEFORE TRUNCATE ON merkle_leaves
  FOR EACH STATEMENT EXECUTE FUNCTION ledger_forbid_anchor_mutation();
CREATE TRIGGER anchor_nodes_no_truncate BEFORE TRUNCATE ON merkle_nodes
  FOR EACH STATEMENT EXECUTE FUNCTION ledger_forbid_anchor_mutation();
CREATE TRIGGER checkpoints_no_truncate BEFORE TRUNCATE ON checkpoints
  FOR EACH STATEMENT EXECUTE FUNCTION ledger_forbid_anchor_mutation();

GRANT SELECT, INSERT ON merkle_leaves, merkle_nodes, checkpoints TO podledger_app;
GRANT USAGE, SELECT ON SEQUENCE checkpoints_id_seq TO podledger_app;
-- The reporting role reads the published checkpoints (not the tree).
GRANT SELECT ON checkpoints TO podledger_reporting;
