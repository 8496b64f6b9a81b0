"""The Merkle tree and checkpoint primitives (pure; RFC 9162 hashing, C2SP signed notes)."""

from __future__ import annotations

import hashlib

import pytest

from ledger import transparency as t


def _leaves(n: int) -> list[bytes]:
    return [t.leaf_hash(i.to_bytes(4, "big")) for i in range(n)]


def _mth(leaves: list[bytes]) -> bytes:
    """RFC 9162 MTH, written recursively as the RFC states it (the reference for root_of)."""
    if len(leaves) == 1:
        return leaves[0]
    k = t.split_point(len(leaves))
    return t.node_hash(_mth(leaves[:k]), _mth(leaves[k:]))


def test_hash_domains_and_known_values():
    assert t.leaf_hash(b"") == hashlib.sha256(b"\x00").digest()
    assert t.node_hash(b"a", b"b") == hashlib.sha256(b"\x01ab").digest()
    # RFC 6962 test vector: the empty tree's root is SHA-256 of the empty string.
    assert t.EMPTY_ROOT.hex() == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


@pytest.mark.parametrize("n", range(1, 34))
def test_root_and_inclusion_for_every_leaf(n):
    leaves = _leaves(n)
    root = t.root_of(leaves)
    assert root == _mth(leaves)
    sub = t.memory_subtree(leaves)
    for i in range(n):
        path = t.inclusion_path(i, n, sub)
        assert t.verify_inclusion(i, n, leaves[i], path, root)
        assert not t.verify_inclusion(i, n, t.leaf_hash(b"other"), path, root)
        if n > 1:
            assert not t.verify_inclusion((i + 1) % n, n, leaves[i], path, root)


@pytest.mark.parametrize("new", range(1, 20))
def test_consistency_between_every_pair_of_sizes(new):
    leaves = _leaves(new)
    sub = t.memory_subtree(leaves)
    new_root = t.root_of(leaves)
    for old in range(1, new + 1):
        old_root = t.root_of(leaves[:old])
        path = t.consistency_path(old, new, sub)
        assert t.verify_consistency(old, new, old_root, new_root, path), (old, new)
        # A different history of the first `old` leaves cannot be proven consistent.
        forged = list(leaves)
        forged[old - 1] = t.leaf_hash(b"forged")
        forged_root = t.root_of(forged[:old])
        assert not t.verify_consistency(old, new, forged_root, new_root, path), (old, new)
        if old < new:
            other_new = t.root_of(forged)
            assert not t.verify_consistency(old, new, old_root, other_new, path), (old, new)


def test_checkpoint_note_round_trip_and_rejections():
    signer = t.Signer.generate("podledger-test")
    v = t.Verifier.parse(signer.verifier.text())
    assert t.Signer.parse(signer.text()) == signer
    cp = t.Checkpoint("example.org/ledger", 7, bytes(range(32)))
    note = t.sign_checkpoint(cp, signer)
    lines = note.split("\n")
    assert lines[:4] == ["example.org/ledger", "7", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", ""]
    assert lines[4].startswith("\u2014 podledger-test ")
    assert t.open_checkpoint(note, v) == cp
    with pytest.raises(t.TransparencyError, match="does not verify"):
        t.open_checkpoint(note.replace("\n7\n", "\n8\n"), v)
    other = t.Signer.generate("podledger-test").verifier
    with pytest.raises(t.TransparencyError, match="no signature by key podledger-test"):
        t.open_checkpoint(note, other)
    with pytest.raises(t.TransparencyError, match="key id does not match|id does not match"):
        t.Verifier.parse(v.text().replace(v.id.hex(), "00000000"))
