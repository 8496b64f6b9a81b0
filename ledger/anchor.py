"""Anchored history: the Merkle tree over the log kept in tables, signed checkpoints, proofs.

The tree (``ledger/transparency.py``) has one leaf per event in position order; leaf ``i`` is
``leaf_hash(position || chain hash)``. ``update_tree`` extends it incrementally: it stores each
new leaf (``merkle_leaves``) and every complete subtree (``merkle_nodes``, level >= 1), so the
root of any size and every proof need O(log n) stored hashes. Before a leaf is stored its event's
hash is recomputed from the event's contents and checked against the chain: a checkpoint never
signs an event whose row does not match its hash.

A checkpoint (C2SP signed note: origin, tree size, root) is signed with an Ed25519 key kept in a
file outside the database (``PODLEDGER_CHECKPOINT_KEY``, default ``$PODLEDGER_HOME/checkpoint.key``)
and copied to ``checkpoints``. Its value comes from being kept *elsewhere* too: whoever holds a
checkpoint can later run ``verify_against_checkpoint``, which recomputes every hash from the
events (it trusts neither the stored hashes nor the stored tree) and checks a consistency proof
from the checkpoint to the current log. A rewrite of any event the checkpoint covers -- by the
application, an operator or a database superuser who recomputed every hash -- fails it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from ledger.database import Database

from ledger import transparency as tl
from ledger.canonical import GENESIS, canonical, event_hash

ANCHOR_LOCK = 7243150003  # serialises tree updates (the ledger lock is 7243150001)
DEFAULT_KEY_NAME = "podledger"
_EVENT_COLUMNS = (
    "position, stream, version, type, schema_version, event_id, data::text, meta::text, "
    "effective_at, prev_hash, hash"
)


class AnchorError(Exception):
    """The tree cannot be extended or a checkpoint/proof cannot be made (names the reason)."""


# -- configuration -----------------------------------------------------------------------------------


def key_path(path: str | Path | None = None) -> Path:
    """The signing key file: ``path``, else ``PODLEDGER_CHECKPOINT_KEY``, else under PODLEDGER_HOME."""
    if path:
        return Path(path)
    env = os.environ.get("PODLEDGER_CHECKPOINT_KEY")
    if env:
        return Path(env)
    from ledger.db import home_dir

    return home_dir() / "checkpoint.key"


def origin(value: str | None = None) -> str:
    """The checkpoint origin line: ``value``, else ``PODLEDGER_CHECKPOINT_ORIGIN``, else ``podledger``."""
    return value or os.environ.get("PODLEDGER_CHECKPOINT_ORIGIN") or "podledger"


def load_signer(path: str | Path | None = None) -> tl.Signer:
    p = key_path(path)
    try:
        text = p.read_text(encoding="ascii")
    except FileNotFoundError:
        raise AnchorError(
            f"no checkpoint key at {p}: create one with `podledger checkpoint --new-key` "
            "(or set PODLEDGER_CHECKPOINT_KEY to the key file)"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise AnchorError(f"cannot read the checkpoint key {p}: {exc}") from exc
    try:
        return tl.Signer.parse(text)
    except tl.TransparencyError as exc:
        raise AnchorError(f"checkpoint key {p}: {exc}") from exc


def create_key(path: str | Path | None = None, name: str = DEFAULT_KEY_NAME) -> tl.Signer:
    """Generate a key and write it (mode 0600) to a file that must not exist yet."""
    p = key_path(path)
    signer = tl.Signer.generate(name)
    p.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise AnchorError(f"{p} exists already; a key is never overwritten") from None
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(signer.text() + "\n")
    return signer


def load_verifier(text_or_path: str) -> tl.Verifier:
    """A verifier key given as text, or as a file holding a verifier key or a signer key."""
    text = text_or_path
    if "+" not in text_or_path or Path(text_or_path).is_file():
        try:
            text = Path(text_or_path).read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise AnchorError(f"cannot read the key {text_or_path}: {exc}") from exc
    try:
        if text.startswith("PRIVATE+KEY+"):
            return tl.Signer.parse(text).verifier
        return tl.Verifier.parse(text)
    except tl.TransparencyError as exc:
        raise AnchorError(str(exc)) from exc


# -- the stored tree ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TreeHead:
    size: int
    root: bytes
    last_position: int


def _frontier_ranges(size: int) -> list[tuple[int, int]]:
    """(level, idx) of the complete subtrees of a tree of ``size`` leaves, largest first."""
    out: list[tuple[int, int]] = []
    start = 0
    for level in range(size.bit_length() - 1, -1, -1):
        if size >> level & 1:
            out.append((level, start >> level))
            start += 1 << level
    return out


def _stored_hash(raw: Any, level: int, idx: int) -> bytes:
    if level == 0:
        row = raw.execute("SELECT hash FROM merkle_leaves WHERE idx = %s", (idx,)).fetchone()
    else:
        row = raw.execute(
            "SELECT hash FROM merkle_nodes WHERE level = %s AND idx = %s", (level, idx)
        ).fetchone()
    if row is None:
        raise AnchorError(f"the stored Merkle tree lacks node (level {level}, index {idx})")
    return bytes(row[0])


def _db_subtree(raw: Any) -> tl.Subtree:
    cache: dict[tuple[int, int], bytes] = {}

    def sub(lo: int, hi: int) -> bytes:
        n = hi - lo
        if n & (n - 1) == 0 and lo % n == 0:
            level = n.bit_length() - 1
            key = (level, lo >> level)
            if key not in cache:
                cache[key] = _stored_hash(raw, *key)
            return cache[key]
        k = tl.split_point(n)
        return tl.node_hash(sub(lo, lo + k), sub(lo + k, hi))

    return sub


def _head(raw: Any) -> TreeHead:
    row = raw.execute("SELECT idx, position FROM merkle_leaves ORDER BY idx DESC LIMIT 1").fetchone()
    if row is None:
        return TreeHead(0, tl.EMPTY_ROOT, 0)
    size = int(row[0]) + 1
    frontier = [_stored_hash(raw, lv, i) for lv, i in _frontier_ranges(size)]
    return TreeHead(size, tl.fold_frontier(frontier), int(row[1]))


def _recomputed(row: tuple[Any, ...]) -> bytes:
    _pos, stream, version, typ, sv, eid, data, meta, eff, _prev, _stored = row
    return event_hash(
        bytes(_prev),
        stream=stream,
        version=version,
        type=typ,
        schema_version=sv,
        event_id=eid,
        data_bytes=canonical(orjson.loads(data)),
        meta_bytes=canonical(orjson.loads(meta)),
        effective_at=eff,
    )


def update_tree(db: Database, batch: int = 5000) -> TreeHead:
    """Add a leaf for every event not in the tree yet (one transaction); return the new head."""
    with db.transaction() as raw:
        raw.execute("SELECT pg_advisory_xact_lock(%s)", (ANCHOR_LOCK,))
        return _extend(raw, batch)


def _extend(raw: Any, batch: int) -> TreeHead:
    head = _head(raw)
    size, last = head.size, head.last_position
    stack: list[tuple[int, int, bytes]] = [
        (lv, i, _stored_hash(raw, lv, i)) for lv, i in _frontier_ranges(size)
    ]
    prev = GENESIS
    if last:
        row = raw.execute("SELECT hash FROM events WHERE position = %s", (last,)).fetchone()
        if row is None:
            raise AnchorError(f"the event at position {last} (leaf {size - 1}) is missing from the log")
        prev = bytes(row[0])
    while True:
        rows = raw.execute(
            f"SELECT {_EVENT_COLUMNS} FROM events WHERE position > %s ORDER BY position LIMIT %s",
            (last, batch),
        ).fetchall()
        if not rows:
            break
        leaves: list[tuple[int, int, bytes]] = []
        nodes: list[tuple[int, int, bytes]] = []
        for row in rows:
            pos, stored = int(row[0]), bytes(row[10])
            if bytes(row[9]) != prev:
                raise AnchorError(
                    f"not signing: the event at position {pos} does not chain to its predecessor"
                )
            if _recomputed(row) != stored:
                raise AnchorError(f"not signing: the event at position {pos} does not match its hash")
            prev = stored
            leaf = tl.leaf_hash(tl.event_entry(pos, stored))
            leaves.append((size, pos, leaf))
            stack.append((0, size, leaf))
            while len(stack) >= 2 and stack[-1][0] == stack[-2][0]:
                lv, ri, rh = stack.pop()
                _, _, lh = stack.pop()
                parent = (lv + 1, ri >> 1, tl.node_hash(lh, rh))
                nodes.append(parent)
                stack.append(parent)
            size, last = size + 1, pos
        with raw.cursor() as cur:
            with cur.copy("COPY merkle_leaves (idx, position, hash) FROM STDIN") as cp:
                for leaf_row in leaves:
                    cp.write_row(leaf_row)
            if nodes:
                with cur.copy("COPY merkle_nodes (level, idx, hash) FROM STDIN") as cp:
                    for node_row in nodes:
                        cp.write_row(node_row)
    root = tl.fold_frontier([h for _, _, h in stack]) if stack else tl.EMPTY_ROOT
    return TreeHead(size, root, last)


# -- checkpoints ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SignedCheckpoint:
    checkpoint: tl.Checkpoint
    note: str
    new: bool  # False: the tree had not grown since the latest checkpoint, which is returned


def make_checkpoint(
    db: Database, signer: tl.Signer, origin_line: str | None = None, *, always: bool = False
) -> SignedCheckpoint:
    """Extend the tree, sign its head and store the note (one transaction).

    Unless ``always``, a tree that has not grown since the newest checkpoint of the same origin
    and key returns that checkpoint instead of signing again.
    """
    org = origin(origin_line)
    with db.transaction() as raw:
        raw.execute("SELECT pg_advisory_xact_lock(%s)", (ANCHOR_LOCK,))
        head = _extend(raw, 5000)
        if not always:
            row = raw.execute(
                "SELECT note FROM checkpoints WHERE origin = %s AND key_name = %s AND tree_size = %s "
                "AND root = %s ORDER BY id DESC LIMIT 1",
                (org, signer.name, head.size, head.root),
            ).fetchone()
            if row is not None:
                return SignedCheckpoint(tl.Checkpoint(org, head.size, head.root), str(row[0]), False)
        cp = tl.Checkpoint(org, head.size, head.root)
        try:
            note = tl.sign_checkpoint(cp, signer)
        except tl.TransparencyError as exc:
            raise AnchorError(str(exc)) from exc
        raw.execute(
            "INSERT INTO checkpoints (origin, tree_size, root, key_name, note) VALUES (%s, %s, %s, %s, %s)",
            (org, head.size, head.root, signer.name, note),
        )
        return SignedCheckpoint(cp, note, True)


def latest_note(db: Database) -> str | None:
    with db.connect() as conn:
        row = conn.execute("SELECT note FROM checkpoints ORDER BY id DESC LIMIT 1").fetchone()
        conn.rollback()
    return None if row is None else str(row[0])


def _parse_unverified(note: str) -> tl.Checkpoint:
    """The body of a note without checking signatures (the stored copies were checked when made)."""
    lines = note.split("\n")
    try:
        return tl.Checkpoint(lines[0], int(lines[1]), tl._unb64(lines[2], "root"))
    except (IndexError, ValueError, tl.TransparencyError) as exc:
        raise AnchorError(f"malformed checkpoint note: {exc}") from exc


# -- proofs ---------------------------------------------------------------------------------------------


def prove(db: Database, position: int, note: str | None = None) -> dict[str, Any]:
    """An inclusion proof of the event at ``position`` in a signed checkpoint's tree.

    ``note``: the checkpoint to prove against (default: the newest stored one that covers the
    event). The result is what ``transparency.verify_event_proof`` checks.
    """
    update_tree(db)
    with db.transaction() as raw:
        row = raw.execute("SELECT idx FROM merkle_leaves WHERE position = %s", (position,)).fetchone()
        if row is None:
            raise AnchorError(f"position {position}: no event at this position")
        index = int(row[0])
        if note is None:
            got = raw.execute(
                "SELECT note FROM checkpoints WHERE tree_size > %s ORDER BY id DESC LIMIT 1", (index,)
            ).fetchone()
            if got is None:
                raise AnchorError(
                    f"position {position}: no checkpoint covers it yet; run `podledger checkpoint` first"
                )
            note = str(got[0])
        cp = _parse_unverified(note)
        size = _head(raw).size
        if cp.size > size:
            raise AnchorError(f"the checkpoint's tree size {cp.size} exceeds this log's tree ({size} leaves)")
        if index >= cp.size:
            raise AnchorError(f"position {position} (leaf {index}) is not in a checkpoint of size {cp.size}")
        path = tl.inclusion_path(index, cp.size, _db_subtree(raw))
        ev = raw.execute(f"SELECT {_EVENT_COLUMNS} FROM events WHERE position = %s", (position,)).fetchone()
    assert ev is not None
    return {
        "checkpoint": note,
        "leaf_index": index,
        "position": position,
        "chain_hash": bytes(ev[10]).hex(),
        "path": [p.hex() for p in path],
        "event": {
            "stream": ev[1],
            "version": ev[2],
            "type": ev[3],
            "schema_version": ev[4],
            "event_id": str(ev[5]),
            "data": orjson.loads(ev[6]),
            "meta": orjson.loads(ev[7]),
            "effective_at": ev[8].isoformat(),
            "prev_hash": bytes(ev[9]).hex(),
        },
    }


# -- verification against a checkpoint ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CheckpointVerdict:
    ok: bool
    checkpoint_size: int
    log_size: int
    reason: str = ""
    first_bad_position: int | None = None


def _iter_events(db: Database) -> Iterator[tuple[Any, ...]]:
    with db.connect() as raw:
        with raw.transaction(), raw.cursor(name="podledger_verify_checkpoint") as cur:
            cur.itersize = 5000
            cur.execute(f"SELECT {_EVENT_COLUMNS} FROM events ORDER BY position")
            yield from cur


def verify_against_checkpoint(db: Database, note: str, verifier: tl.Verifier) -> CheckpointVerdict:
    """Is the current log an append-only extension of the signed checkpoint ``note``?

    Checks the signature, recomputes every event hash from the stored contents (the chain), builds
    the tree from those recomputed hashes (ignoring the stored tree) and verifies a consistency
    proof from the checkpoint's (size, root) to the current (size, root).
    """
    try:
        cp = tl.open_checkpoint(note, verifier)
    except tl.TransparencyError as exc:
        return CheckpointVerdict(False, 0, 0, f"checkpoint rejected: {exc}")
    leaves: list[bytes] = []
    positions: list[int] = []
    prev = GENESIS
    for row in _iter_events(db):
        pos = int(row[0])
        if bytes(row[9]) != prev:
            return CheckpointVerdict(
                False, cp.size, len(leaves), "prev_hash does not match the preceding event", pos
            )
        h = _recomputed(row)
        if h != bytes(row[10]):
            return CheckpointVerdict(False, cp.size, len(leaves), "the event does not match its hash", pos)
        prev = h
        leaves.append(tl.leaf_hash(tl.event_entry(pos, h)))
        positions.append(pos)
    n = len(leaves)
    if n < cp.size:
        return CheckpointVerdict(
            False,
            cp.size,
            n,
            f"the log holds {n} events but the checkpoint covers {cp.size} (events removed)",
        )
    if cp.size == 0:
        return CheckpointVerdict(
            cp.root == tl.EMPTY_ROOT, 0, n, "" if cp.root == tl.EMPTY_ROOT else "bad root"
        )
    sub = tl.memory_subtree(leaves)
    new_root = tl.root_of(leaves)
    proof = tl.consistency_path(cp.size, n, sub)
    if tl.verify_consistency(cp.size, n, cp.root, new_root, proof):
        return CheckpointVerdict(True, cp.size, n)
    bad = _first_divergence(db, leaves, positions, cp.size)
    return CheckpointVerdict(
        False,
        cp.size,
        n,
        f"the log is not an extension of the checkpoint (size {cp.size}): its first {cp.size} events "
        "differ from the ones that were signed",
        bad,
    )


def _first_divergence(db: Database, leaves: list[bytes], positions: list[int], size: int) -> int | None:
    """Where the recomputed leaves first differ from the stored tree, if that tree is the signed one."""
    with db.transaction() as raw:
        stored = [
            bytes(r[0])
            for r in raw.execute(
                "SELECT hash FROM merkle_leaves WHERE idx < %s ORDER BY idx", (size,)
            ).fetchall()
        ]
    for i, leaf in enumerate(leaves[:size]):
        if i >= len(stored) or stored[i] != leaf:
            return positions[i]
    return None
