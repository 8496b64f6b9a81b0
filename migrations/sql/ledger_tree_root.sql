-- The Merkle tree hash of the first p_size leaves (RFC 9162 §2.1.1) from the stored tree
-- (merkle_leaves, merkle_nodes: every complete subtree is stored): the complete subtrees that
-- make up the tree, largest first, folded from the right. O(log n) index probes. Raises when a
-- subtree is missing. Used by ledger_store_checkpoint (with its pinned search_path).
CREATE OR REPLACE FUNCTION ledger_tree_root(p_size bigint) RETURNS bytea
LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_frontier bytea[] := '{}';
  v_start bigint := 0;
  v_h bytea;
  v_root bytea;
BEGIN
  IF p_size IS NULL OR p_size < 0 THEN
    RAISE EXCEPTION 'tree size % is not a size', p_size;
  END IF;
  IF p_size = 0 THEN
    RETURN sha256(''::bytea);
  END IF;
  FOR v_lv IN REVERSE 62..0 LOOP
    IF (p_size >> v_lv) & 1 = 1 THEN
      IF v_lv = 0 THEN
        SELECT l.hash INTO v_h FROM merkle_leaves l WHERE l.idx = v_start;
      ELSE
        SELECT n.hash INTO v_h FROM merkle_nodes n WHERE n.level = v_lv AND n.idx = v_start >> v_lv;
      END IF;
      IF v_h IS NULL THEN
        RAISE EXCEPTION 'the stored Merkle tree lacks node (level %, index %)', v_lv, v_start >> v_lv
          USING ERRCODE = 'object_not_in_prerequisite_state';
      END IF;
      v_frontier := v_frontier || v_h;
      v_start := v_start + (1::bigint << v_lv);
    END IF;
  END LOOP;
  v_root := v_frontier[cardinality(v_frontier)];
  FOR i IN REVERSE cardinality(v_frontier) - 1 .. 1 LOOP
    v_root := sha256('\x01'::bytea || v_frontier[i] || v_root);
  END LOOP;
  RETURN v_root;
END
$$;
