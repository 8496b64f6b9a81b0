"""Anchored history: the Merkle tree over the log kept in tables, signed checkpoints, proofs.

The tree (``ledger/transparency.py``) has one leaf per event in position order; leaf ``i`` is
``leaf_hash(position || chain hash)``. ``update_tree`` extends it incrementally: it stores each
new leaf (``merkle_leaves``) and every complete subtree (``merkle_nodes``, level >= 1), so the
root of any size and every proof need O(log n) stored hashes. Before a leaf is stored its event's
hash is recomputed from the event's contents and checked against the chain: a checkpoint never
signs an event whose row does not match its hash.

The tables are written only by two SECURITY DEFINER functions (migration 0024):
``ledger_extend_tree`` computes the leaves and nodes itself from the stored events, and
``ledger_store_checkpoint`` stores a note only for a (size, root) of the stored tree. Neither can
check an Ed25519 signature, so a stored note is verified with the signer's public key before it
is served (``latest_note``, ``make_checkpoint``) or proved against (``prove``); a note that does
not verify is ignored.

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
from ledger.verify import HashVersions

ANCHOR_LOCK = 7243150003  # serialises tree updates (the ledger lock is 7243150001)
DEFAULT_KEY_NAME = "podledger"
_EVENT_COLUMNS = (
    "position, stream, version, type, schema_version, event_id, data::text, meta::text, "
    "effective_at, prev_hash, hash, recorded_at"
)
NOTE_SCAN = 64  # stored notes of a key read (newest first) when looking for one that verifies


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


def configured_verifier(public_key: str | None = None) -> tl.Verifier | None:
    """The key stored checkpoints are checked with: ``public_key`` (text or file), else
    ``PODLEDGER_CHECKPOINT_VERIFIER_KEY``, else the public half of the signing key file when
    there is one; None when nothing is configured."""
    given = public_key or os.environ.get("PODLEDGER_CHECKPOINT_VERIFIER_KEY")
    if given:
        return load_verifier(given)
    if key_path().exists():
        return load_signer().verifier
    return None


def require_verifier(public_key: str | None = None) -> tl.Verifier:
    verifier = configured_verifier(public_key)
    if verifier is None:
        raise AnchorError(
            "no key to check the stored checkpoints with: give the verifier key "
            "(--public-key or PODLEDGER_CHECKPOINT_VERIFIER_KEY) or the signing key (PODLEDGER_CHECKPOINT_KEY)"
        )
    return verifier


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


def _recomputed(row: tuple[Any, ...], rules: HashVersions) -> bytes:
    pos, stream, version, typ, sv, eid, data, meta, eff, prev, _stored, recorded = row
    return event_hash(
        bytes(prev),
        stream=stream,
        version=version,
        type=typ,
        schema_version=sv,
        event_id=eid,
        data_bytes=canonical(orjson.loads(data)),
        meta_bytes=canonical(orjson.loads(meta)),
        effective_at=eff,
        recorded_at=rules.recorded(int(pos), recorded),
    )


def update_tree(db: Database, batch: int = 5000) -> TreeHead:
    """Add a leaf for every event not in the tree yet (one transaction); return the new head."""
    with db.transaction() as raw:
        raw.execute("SELECT pg_advisory_xact_lock(%s)", (ANCHOR_LOCK,))
        return _extend(raw, batch)


def _link_at(raw: Any, position: int) -> tuple[int, bytes]:
    """Where a walk from ``position`` starts: that event's position and stored hash (the
    genesis link at 0; the last detached event when ``position`` was detached)."""
    if position == 0:
        return 0, GENESIS
    row = raw.execute("SELECT hash FROM events WHERE position = %s", (position,)).fetchone()
    if row is not None:
        return position, bytes(row[0])
    det = raw.execute(
        "SELECT last_position, last_hash FROM event_archive.detached ORDER BY hi DESC LIMIT 1"
    ).fetchone()
    if det is not None and det[0] is not None and int(det[0]) >= position:
        return int(det[0]), bytes(det[1])
    raise AnchorError(f"the event at position {position} is missing from the log")


def _extend(raw: Any, batch: int, checked: int | None = None) -> TreeHead:
    """Check events and add the new ones to the tree (``ledger_extend_tree``); the new head.

    Every event after the tree's last leaf is checked before it becomes one: it must chain to
    its predecessor and its hash must be what its contents give. With ``checked`` (the size of
    the last checkpoint signed with this key) the leaves from there on are checked the same way
    (the database function may have been called by someone who checks nothing), so a checkpoint
    never signs an event whose row does not match its hash.
    """
    rules = HashVersions.read(raw)
    row = raw.execute("SELECT idx + 1, position FROM merkle_leaves ORDER BY idx DESC LIMIT 1").fetchone()
    size, last = (int(row[0]), int(row[1])) if row else (0, 0)
    after = last
    if checked is not None and checked < size:
        got = raw.execute("SELECT position FROM merkle_leaves WHERE idx = %s", (checked - 1,)).fetchone()
        after = int(got[0]) if got else 0
    after, prev = _link_at(raw, after)
    while True:
        rows = raw.execute(
            f"SELECT {_EVENT_COLUMNS} FROM events WHERE position > %s ORDER BY position LIMIT %s",
            (after, batch),
        ).fetchall()
        if not rows:
            break
        new = 0
        for r in rows:
            pos, stored = int(r[0]), bytes(r[10])
            if bytes(r[9]) != prev:
                raise AnchorError(
                    f"not signing: the event at position {pos} does not chain to its predecessor"
                )
            if _recomputed(r, rules) != stored:
                raise AnchorError(f"not signing: the event at position {pos} does not match its hash")
            prev = stored
            new += pos > last
        after = int(rows[-1][0])
        if new:
            raw.execute("SELECT ledger_extend_tree(%s, %s)", (after, new))
            last = after
    return _head(raw)


# -- checkpoints ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SignedCheckpoint:
    checkpoint: tl.Checkpoint
    note: str
    new: bool  # False: the tree had not grown since the latest checkpoint, which is returned


def _verified_notes(
    raw: Any, verifier: tl.Verifier, where: str = "", params: tuple[Any, ...] = ()
) -> Iterator[tuple[tl.Checkpoint, str]]:
    """Stored notes of ``verifier``'s key name (newest first, at most ``NOTE_SCAN``; ``where``:
    more conditions on the row) whose signature verifies and whose body is the row's."""
    rows = raw.execute(
        f"SELECT note, origin, tree_size, root FROM checkpoints WHERE key_name = %s {where} "
        "ORDER BY id DESC LIMIT %s",
        (verifier.name, *params, NOTE_SCAN),
    ).fetchall()
    for note, org, size, root in rows:
        try:
            cp = tl.open_checkpoint(str(note), verifier)
        except tl.TransparencyError:
            continue  # a row nobody signed with this key: never served, never proved against
        if (cp.origin, cp.size, cp.root) == (org, int(size), bytes(root)):
            yield cp, str(note)


def make_checkpoint(
    db: Database, signer: tl.Signer, origin_line: str | None = None, *, always: bool = False
) -> SignedCheckpoint:
    """Extend the tree, sign its head and store the note (one transaction).

    Unless ``always``, a tree that has not grown since the newest checkpoint of the same origin
    and key returns that checkpoint (its signature verified) instead of signing again.
    """
    org = origin(origin_line)
    verifier = signer.verifier
    with db.transaction() as raw:
        raw.execute("SELECT pg_advisory_xact_lock(%s)", (ANCHOR_LOCK,))
        signed = next(_verified_notes(raw, verifier), None)
        head = _extend(raw, 5000, signed[0].size if signed else 0)
        if not always:
            for cp, note in _verified_notes(
                raw, verifier, "AND origin = %s AND tree_size = %s AND root = %s", (org, head.size, head.root)
            ):
                return SignedCheckpoint(cp, note, False)
        cp = tl.Checkpoint(org, head.size, head.root)
        try:
            note = tl.sign_checkpoint(cp, signer)
        except tl.TransparencyError as exc:
            raise AnchorError(str(exc)) from exc
        raw.execute(
            "SELECT ledger_store_checkpoint(%s, %s, %s, %s, %s)",
            (org, head.size, head.root, signer.name, note),
        )
        return SignedCheckpoint(cp, note, True)


def latest_note(db: Database, verifier: tl.Verifier) -> str | None:
    """The newest stored checkpoint signed with ``verifier``'s key (None: none verifies)."""
    with db.transaction() as conn:
        found = next(_verified_notes(conn, verifier), None)
    return None if found is None else found[1]


# -- proofs ---------------------------------------------------------------------------------------------


def prove(db: Database, position: int, verifier: tl.Verifier, note: str | None = None) -> dict[str, Any]:
    """An inclusion proof of the event at ``position`` in a signed checkpoint's tree.

    ``note``: the checkpoint to prove against (default: the newest stored one signed with
    ``verifier``'s key that covers the event); either way its signature is verified first. The
    result is what ``transparency.verify_event_proof`` checks.
    """
    update_tree(db)
    with db.transaction() as raw:
        row = raw.execute("SELECT idx FROM merkle_leaves WHERE position = %s", (position,)).fetchone()
        if row is None:
            raise AnchorError(f"position {position}: no event at this position")
        index = int(row[0])
        size = _head(raw).size
        if note is None:
            found = next(
                _verified_notes(raw, verifier, "AND tree_size > %s AND tree_size <= %s", (index, size)), None
            )
            if found is None:
                raise AnchorError(
                    f"position {position}: no checkpoint signed by key {verifier.name} covers it yet; "
                    "run `podledger checkpoint` first"
                )
            cp, note = found
        else:
            try:
                cp = tl.open_checkpoint(note, verifier)
            except tl.TransparencyError as exc:
                raise AnchorError(f"checkpoint rejected: {exc}") from exc
        if cp.size > size:
            raise AnchorError(f"the checkpoint's tree size {cp.size} exceeds this log's tree ({size} leaves)")
        if index >= cp.size:
            raise AnchorError(f"position {position} (leaf {index}) is not in a checkpoint of size {cp.size}")
        sub = _db_subtree(raw)
        if sub(0, cp.size) != cp.root:
            raise AnchorError(
                f"the checkpoint is not a checkpoint of this log: its root differs at size {cp.size}"
            )
        path = tl.inclusion_path(index, cp.size, sub)
        ev = raw.execute(f"SELECT {_EVENT_COLUMNS} FROM events WHERE position = %s", (position,)).fetchone()
        hash_version = HashVersions.read(raw).at(position)
    assert ev is not None
    event = {
        "stream": ev[1],
        "version": ev[2],
        "type": ev[3],
        "schema_version": ev[4],
        "event_id": str(ev[5]),
        "data": orjson.loads(ev[6]),
        "meta": orjson.loads(ev[7]),
        "effective_at": ev[8].isoformat(),
        "prev_hash": bytes(ev[9]).hex(),
    }
    if hash_version >= 2:
        event["recorded_at"] = ev[11].isoformat()
    return {
        "checkpoint": note,
        "leaf_index": index,
        "position": position,
        "hash_version": hash_version,
        "chain_hash": bytes(ev[10]).hex(),
        "path": [p.hex() for p in path],
        "event": event,
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
    with db.connect() as conn:
        rules = HashVersions.read(conn)
    for row in _iter_events(db):
        pos = int(row[0])
        if bytes(row[9]) != prev:
            return CheckpointVerdict(
                False, cp.size, len(leaves), "prev_hash does not match the preceding event", pos
            )
        h = _recomputed(row, rules)
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
