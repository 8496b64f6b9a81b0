-- The only way into checkpoints (migration 0024; the application role may read it, not write
-- it). A checkpoint is stored only if it is one of this log's tree heads: its tree size is at
-- most the stored tree's, its root is the stored tree's root at that size (ledger_tree_root),
-- the note's body is exactly `origin \n size \n base64(root) \n` followed by an empty line, and
-- every line after it is a signature line `— <key name> <base64 of 68 bytes>` (key id and
-- Ed25519 signature, C2SP signed note), one of them by p_key_name. Bounded sizes: origin and key
-- name at most 256 characters, the note at most 8 KiB.
--
-- The signature itself is not checked here (no Ed25519 in SQL): whoever serves or proves
-- against a stored note verifies it with the signer's public key first (ledger/anchor.py). A
-- row that passes these checks but carries a forged signature is ignored there; it cannot
-- name a tree size or root this log does not have.
CREATE OR REPLACE FUNCTION ledger_store_checkpoint(p_origin text, p_size bigint, p_root bytea, p_key_name text,
                                                   p_note text) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  v_leaves bigint;
  v_body text;
  v_sigs text;
  v_line text;
  v_match text[];
  v_signed boolean := false;
  v_id bigint;
BEGIN
  IF p_origin IS NULL OR p_origin = '' OR length(p_origin) > 256 OR p_origin ~ '[[:cntrl:]]' THEN
    RAISE EXCEPTION 'checkpoint refused: the origin must be one printable line of at most 256 characters'
      USING ERRCODE = 'check_violation';
  END IF;
  IF p_key_name IS NULL OR length(p_key_name) > 256 OR p_key_name !~ '^[^[:space:][:cntrl:]+]+$' THEN
    RAISE EXCEPTION 'checkpoint refused: the key name must be 1 to 256 printable characters without spaces or +'
      USING ERRCODE = 'check_violation';
  END IF;
  IF p_note IS NULL OR octet_length(p_note) > 8192 THEN
    RAISE EXCEPTION 'checkpoint refused: the note is missing or over 8 KiB' USING ERRCODE = 'check_violation';
  END IF;
  IF p_root IS NULL OR octet_length(p_root) <> 32 THEN
    RAISE EXCEPTION 'checkpoint refused: the root hash is not 32 bytes' USING ERRCODE = 'check_violation';
  END IF;
  PERFORM pg_advisory_xact_lock(7243150003);  -- the tree does not grow meanwhile
  SELECT l.idx + 1 INTO v_leaves FROM merkle_leaves l ORDER BY l.idx DESC LIMIT 1;
  v_leaves := coalesce(v_leaves, 0);
  IF p_size IS NULL OR p_size < 0 OR p_size > v_leaves THEN
    RAISE EXCEPTION 'checkpoint refused: tree size % is not a size of the stored tree (% leaves)', p_size, v_leaves
      USING ERRCODE = 'check_violation';
  END IF;
  IF ledger_tree_root(p_size) <> p_root THEN
    RAISE EXCEPTION 'checkpoint refused: the root is not the stored tree''s root at size %', p_size
      USING ERRCODE = 'check_violation';
  END IF;
  v_body := p_origin || E'\n' || p_size::text || E'\n' || encode(p_root, 'base64') || E'\n\n';
  IF left(p_note, length(v_body)) IS DISTINCT FROM v_body THEN
    RAISE EXCEPTION 'checkpoint refused: the note''s body is not its origin, tree size and root'
      USING ERRCODE = 'check_violation';
  END IF;
  v_sigs := substr(p_note, length(v_body) + 1);
  IF v_sigs = '' OR right(v_sigs, 1) <> E'\n' THEN
    RAISE EXCEPTION 'checkpoint refused: the note has no signature lines' USING ERRCODE = 'check_violation';
  END IF;
  FOREACH v_line IN ARRAY string_to_array(left(v_sigs, -1), E'\n') LOOP
    v_match := regexp_match(v_line, '^— ([^ ]+) ([A-Za-z0-9+/]+={0,2})$');
    IF v_match IS NULL OR length(v_match[2]) % 4 <> 0 THEN
      RAISE EXCEPTION 'checkpoint refused: malformed signature line' USING ERRCODE = 'check_violation';
    END IF;
    IF v_match[1] = p_key_name AND octet_length(decode(v_match[2], 'base64')) = 68 THEN
      v_signed := true;
    END IF;
  END LOOP;
  IF NOT v_signed THEN
    RAISE EXCEPTION 'checkpoint refused: no signature line by key %', p_key_name USING ERRCODE = 'check_violation';
  END IF;
  INSERT INTO checkpoints (origin, tree_size, root, key_name, note)
  VALUES (p_origin, p_size, p_root, p_key_name, p_note)
  RETURNING id INTO v_id;
  RETURN v_id;
END
$$;
