-- The only way into merkle_leaves and merkle_nodes (migration 0024; the application role may
-- read them, not write them). Adds a leaf for every event with a position in
-- (last leaf's position, p_upto], in position order, computed here from the stored event:
-- leaf = SHA-256(0x00 || position (8 bytes, big-endian) || the event's chain hash), and then
-- every complete subtree that the new leaves complete: node = SHA-256(0x01 || left || right)
-- (RFC 9162 §2.1.1). Nothing the caller sends is stored, so the stored tree is always the tree
-- of the stored hashes. p_count (when given): the number of events the caller checked in that
-- range; a different number raises (the caller's view and the log disagree). Returns the new
-- tree size. Serialised by the anchor lock (the one ledger/anchor.py takes).
--
-- The caller (ledger/anchor.py) recomputes each event's hash from its contents before it
-- calls this; a checkpoint re-checks every leaf added since the last checkpoint it verified.
CREATE OR REPLACE FUNCTION ledger_extend_tree(p_upto bigint, p_count bigint DEFAULT NULL) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  v_old bigint;
  v_last bigint;
  v_n bigint;
  v_new bigint;
  v_lv int := 1;
BEGIN
  PERFORM pg_advisory_xact_lock(7243150003);
  SELECT l.idx + 1, l.position INTO v_old, v_last FROM merkle_leaves l ORDER BY l.idx DESC LIMIT 1;
  v_old := coalesce(v_old, 0);
  v_last := coalesce(v_last, 0);
  INSERT INTO merkle_leaves (idx, position, hash)
  SELECT v_old + row_number() OVER (ORDER BY e.position) - 1, e.position,
         sha256('\x00'::bytea || int8send(e.position) || e.hash)
  FROM events e WHERE e.position > v_last AND e.position <= p_upto;
  GET DIAGNOSTICS v_n = ROW_COUNT;
  IF p_count IS NOT NULL AND v_n <> p_count THEN
    RAISE EXCEPTION 'the log holds % events in positions (%, %], the caller checked %', v_n, v_last, p_upto, p_count
      USING ERRCODE = 'object_not_in_prerequisite_state';
  END IF;
  v_new := v_old + v_n;
  -- level v_lv gains the nodes [v_old >> v_lv, v_new >> v_lv), made from pairs of level v_lv - 1
  WHILE (v_new >> v_lv) > (v_old >> v_lv) LOOP
    IF v_lv = 1 THEN
      INSERT INTO merkle_nodes (level, idx, hash)
      SELECT 1, l.idx >> 1, sha256('\x01'::bytea || l.hash || r.hash)
      FROM merkle_leaves l JOIN merkle_leaves r ON r.idx = l.idx + 1
      WHERE l.idx >= (v_old >> 1) * 2 AND l.idx < (v_new >> 1) * 2 AND l.idx % 2 = 0;
    ELSE
      INSERT INTO merkle_nodes (level, idx, hash)
      SELECT v_lv, l.idx >> 1, sha256('\x01'::bytea || l.hash || r.hash)
      FROM merkle_nodes l JOIN merkle_nodes r ON r.level = l.level AND r.idx = l.idx + 1
      WHERE l.level = v_lv - 1 AND l.idx >= (v_old >> v_lv) * 2 AND l.idx < (v_new >> v_lv) * 2
        AND l.idx % 2 = 0;
    END IF;
    v_lv := v_lv + 1;
  END LOOP;
  RETURN v_new;
END
$$;
