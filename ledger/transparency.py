"""Transparency-log primitives: a Merkle tree over the events and signed checkpoints.

Pure functions, no database (``ledger/anchor.py`` keeps the tree in tables):

- Tree hashing as in RFC 9162 §2.1.1: ``leaf = SHA-256(0x00 || entry)``,
  ``node = SHA-256(0x01 || left || right)``; the tree over ``n`` leaves splits at the largest
  power of two smaller than ``n``. The entry of an event is ``position (8 bytes, big-endian) ||
  its chain hash`` (``ledger.canonical.event_hash``), so a leaf commits to the event's contents
  and its place in the log.
- Inclusion proofs (RFC 9162 §2.1.3) and consistency proofs (§2.1.4), with their verifiers.
- Checkpoints as C2SP signed notes (https://c2sp.org/tlog-checkpoint, https://c2sp.org/signed-note):
  the body ``<origin>\\n<tree size>\\n<base64 root hash>\\n``, an empty line, and one signature
  line ``— <key name> <base64(key id (4 bytes) || Ed25519 signature)>``. The key id is the first
  four bytes of ``SHA-256(key name || 0x0A || 0x01 || public key)``.
- Keys in the signed-note text formats: a signer key ``PRIVATE+KEY+<name>+<hex id>+<base64(0x01
  || seed)>`` (kept in a file outside the database) and a verifier key ``<name>+<hex id>+
  <base64(0x01 || public key)>`` (given to whoever checks checkpoints and proofs).

``verify_event_proof`` is the function an outside party runs: it needs the proof document printed
by ``podledger prove`` and the verifier key, nothing else.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

ALG_ED25519 = 0x01
EM_DASH = "\u2014"


class TransparencyError(Exception):
    """A checkpoint, key or proof is malformed, or it does not verify."""


# -- tree hashing ----------------------------------------------------------------------------------


def leaf_hash(entry: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + entry).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def event_entry(position: int, chain_hash: bytes) -> bytes:
    """The leaf entry of the event at ``position`` whose chain hash is ``chain_hash``."""
    if len(chain_hash) != 32:
        raise TransparencyError("an event hash is 32 bytes")
    return position.to_bytes(8, "big") + chain_hash


def split_point(n: int) -> int:
    """The largest power of two smaller than ``n`` (n >= 2)."""
    return 1 << ((n - 1).bit_length() - 1)


EMPTY_ROOT = hashlib.sha256(b"").digest()

Subtree = Callable[[int, int], bytes]
"""``subtree(lo, hi)``: the Merkle tree hash of leaves ``lo .. hi-1`` (hi > lo)."""


def root_of(leaves: Sequence[bytes]) -> bytes:
    """MTH over leaf hashes (iteratively, with a stack of complete subtrees)."""
    if not leaves:
        return EMPTY_ROOT
    stack: list[tuple[int, bytes]] = []  # (size, hash) of complete subtrees, sizes decreasing
    for leaf in leaves:
        size, h = 1, leaf
        while stack and stack[-1][0] == size:
            left = stack.pop()[1]
            size, h = size * 2, node_hash(left, h)
        stack.append((size, h))
    return fold_frontier([h for _, h in stack])


def fold_frontier(frontier: Sequence[bytes]) -> bytes:
    """The root from the complete subtrees of a tree, largest (leftmost) first."""
    root = frontier[-1]
    for h in reversed(frontier[:-1]):
        root = node_hash(h, root)
    return root


def memory_subtree(leaves: Sequence[bytes]) -> Subtree:
    """A ``Subtree`` over leaf hashes held in memory."""

    def sub(lo: int, hi: int) -> bytes:
        return root_of(leaves[lo:hi])

    return sub


def inclusion_path(index: int, size: int, sub: Subtree) -> list[bytes]:
    """RFC 9162 PATH(index, D[0:size])."""
    if not 0 <= index < size:
        raise TransparencyError(f"leaf index {index} is outside a tree of size {size}")
    path: list[bytes] = []
    lo, hi = 0, size
    while hi - lo > 1:
        k = split_point(hi - lo)
        if index - lo < k:
            path.append(sub(lo + k, hi))
            hi = lo + k
        else:
            path.append(sub(lo, lo + k))
            lo = lo + k
    path.reverse()
    return path


def consistency_path(old: int, new: int, sub: Subtree) -> list[bytes]:
    """RFC 9162 PROOF(old, D[0:new]) for 0 < old <= new."""
    if not 0 < old <= new:
        raise TransparencyError(f"no consistency proof from size {old} to size {new}")
    path: list[bytes] = []
    lo, hi, m, complete = 0, new, old, True
    while m != hi - lo:
        k = split_point(hi - lo)
        if m <= k:
            path.append(sub(lo + k, hi))
            hi = lo + k
        else:
            path.append(sub(lo, lo + k))
            lo, m, complete = lo + k, m - k, False
    if not complete:
        path.append(sub(lo, hi))
    path.reverse()
    return path


def verify_inclusion(index: int, size: int, leaf: bytes, path: Sequence[bytes], root: bytes) -> bool:
    """RFC 9162 §2.1.3.2."""
    if not 0 <= index < size:
        return False
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root


def verify_consistency(old: int, new: int, old_root: bytes, new_root: bytes, path: Sequence[bytes]) -> bool:
    """RFC 9162 §2.1.4.2 (old > 0)."""
    if old <= 0 or old > new:
        return False
    if old == new:
        return not path and old_root == new_root
    if not path:
        return False
    nodes = list(path)
    if old & (old - 1) == 0:  # a power of two: the old root is the first node
        nodes.insert(0, old_root)
    fn, sn = old - 1, new - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = nodes[0]
    for c in nodes[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    return fr == old_root and sr == new_root and sn == 0


# -- keys ------------------------------------------------------------------------------------------


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode("ascii")


def _unb64(s: str, what: str) -> bytes:
    try:
        return base64.b64decode(s.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError) as exc:
        raise TransparencyError(f"{what} is not valid base64") from exc


def _check_name(name: str) -> None:
    if not name or any(c.isspace() or c == "+" for c in name) or not name.isprintable():
        raise TransparencyError(f"key name {name!r} must be non-empty, printable, without spaces or '+'")


def key_id(name: str, public: bytes) -> bytes:
    return hashlib.sha256(name.encode() + b"\n" + bytes([ALG_ED25519]) + public).digest()[:4]


def _public_bytes(pub: Ed25519PublicKey) -> bytes:
    return pub.public_bytes(Encoding.Raw, PublicFormat.Raw)


@dataclass(frozen=True)
class Verifier:
    name: str
    public: bytes

    @property
    def id(self) -> bytes:
        return key_id(self.name, self.public)

    def text(self) -> str:
        """The verifier key, ``<name>+<hex id>+<base64(0x01 || public key)>``."""
        return f"{self.name}+{self.id.hex()}+{_b64(bytes([ALG_ED25519]) + self.public)}"

    @classmethod
    def parse(cls, text: str) -> Verifier:
        parts = text.strip().split("+", 2)
        if len(parts) != 3:
            raise TransparencyError("a verifier key reads <name>+<hex key id>+<base64 key>")
        name, hid, b64 = parts
        _check_name(name)
        raw = _unb64(b64, "the verifier key")
        if len(raw) != 33 or raw[0] != ALG_ED25519:
            raise TransparencyError("the verifier key is not an Ed25519 key")
        v = cls(name, raw[1:])
        if v.id.hex() != hid.lower():
            raise TransparencyError("the verifier key's id does not match its name and key")
        return v

    def verify(self, message: bytes, signature: bytes) -> bool:
        try:
            Ed25519PublicKey.from_public_bytes(self.public).verify(signature, message)
            return True
        except InvalidSignature:
            return False


@dataclass(frozen=True)
class Signer:
    name: str
    seed: bytes

    @classmethod
    def generate(cls, name: str) -> Signer:
        _check_name(name)
        from cryptography.hazmat.primitives.serialization import NoEncryption, PrivateFormat

        key = Ed25519PrivateKey.generate()
        return cls(name, key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption()))

    def _key(self) -> Ed25519PrivateKey:
        return Ed25519PrivateKey.from_private_bytes(self.seed)

    @property
    def verifier(self) -> Verifier:
        return Verifier(self.name, _public_bytes(self._key().public_key()))

    def text(self) -> str:
        """The signer key, ``PRIVATE+KEY+<name>+<hex id>+<base64(0x01 || seed)>``."""
        return f"PRIVATE+KEY+{self.name}+{self.verifier.id.hex()}+{_b64(bytes([ALG_ED25519]) + self.seed)}"

    @classmethod
    def parse(cls, text: str) -> Signer:
        parts = text.strip().split("+", 4)
        if len(parts) != 5 or parts[:2] != ["PRIVATE", "KEY"]:
            raise TransparencyError("a signer key reads PRIVATE+KEY+<name>+<hex key id>+<base64 key>")
        name, hid, b64 = parts[2:]
        _check_name(name)
        raw = _unb64(b64, "the signer key")
        if len(raw) != 33 or raw[0] != ALG_ED25519:
            raise TransparencyError("the signer key is not an Ed25519 key")
        s = cls(name, raw[1:])
        if s.verifier.id.hex() != hid.lower():
            raise TransparencyError("the signer key's id does not match its name and key")
        return s

    def sign(self, message: bytes) -> bytes:
        return self._key().sign(message)


# -- checkpoints -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Checkpoint:
    origin: str
    size: int
    root: bytes

    def body(self) -> str:
        return f"{self.origin}\n{self.size}\n{_b64(self.root)}\n"


def sign_checkpoint(cp: Checkpoint, signer: Signer) -> str:
    """The signed note of ``cp``: body, empty line, one signature line."""
    if not cp.origin or "\n" in cp.origin or not cp.origin.isprintable():
        raise TransparencyError("the checkpoint origin must be one printable line")
    body = cp.body()
    sig = signer.sign(body.encode())
    return f"{body}\n{EM_DASH} {signer.name} {_b64(signer.verifier.id + sig)}\n"


def open_checkpoint(note: str, verifier: Verifier) -> Checkpoint:
    """Parse a signed checkpoint note and check its signature by ``verifier``.

    Raises ``TransparencyError`` when the note is malformed or carries no valid signature by
    that key (signatures by other keys are ignored, as the signed-note format says).
    """
    body, sep, sigs = note.partition("\n\n")
    if not sep or not body:
        raise TransparencyError("a checkpoint is a note: text, an empty line, signature lines")
    body += "\n"
    lines = body.split("\n")[:-1]
    if len(lines) < 3:
        raise TransparencyError("a checkpoint body has an origin, a tree size and a root hash line")
    origin, size_text, root_text = lines[0], lines[1], lines[2]
    if not size_text.isdigit() or (size_text != "0" and size_text.startswith("0")):
        raise TransparencyError(f"checkpoint tree size {size_text!r} is not a decimal number")
    root = _unb64(root_text, "the checkpoint root hash")
    if len(root) != 32:
        raise TransparencyError("the checkpoint root hash is not 32 bytes")
    found = False
    for line in sigs.splitlines():
        if not line:
            continue
        fields = line.split(" ")
        if len(fields) != 3 or fields[0] != EM_DASH:
            raise TransparencyError(f"malformed signature line {line!r}")
        if fields[1] != verifier.name:
            continue
        raw = _unb64(fields[2], "a checkpoint signature")
        if len(raw) != 68 or raw[:4] != verifier.id:
            continue
        if not verifier.verify(body.encode(), raw[4:]):
            raise TransparencyError(f"the checkpoint signature by {verifier.name} does not verify")
        found = True
    if not found:
        raise TransparencyError(f"the checkpoint carries no signature by key {verifier.name}")
    return Checkpoint(origin, int(size_text), root)


# -- the outside verifier ----------------------------------------------------------------------------


def _hex(doc: Mapping[str, Any], key: str, size: int | None = None) -> bytes:
    try:
        value = bytes.fromhex(str(doc[key]))
    except (KeyError, ValueError) as exc:
        raise TransparencyError(f"proof field {key!r} is missing or not hex") from exc
    if size is not None and len(value) != size:
        raise TransparencyError(f"proof field {key!r} is not {size} bytes")
    return value


def verify_event_proof(proof: Mapping[str, Any], verifier_key: str) -> Checkpoint:
    """Check an inclusion proof printed by ``podledger prove`` with the verifier key alone.

    The proof is a JSON object: ``checkpoint`` (the signed note), ``leaf_index``, ``position``,
    ``hash_version`` (1 when absent), ``chain_hash`` and ``path`` (hex strings), and ``event``
    (the stored event's fields with its ``prev_hash``; ``recorded_at`` under hash version 2).
    Checks, in order: the checkpoint's signature; that the event's fields hash to ``chain_hash``
    (so the proof is about *this* content); that the leaf for ``position`` and ``chain_hash`` is
    at ``leaf_index`` of the signed tree. Returns the checkpoint, raises ``TransparencyError`` on
    any failure.
    """
    from ledger.canonical import canonical, event_hash

    cp = open_checkpoint(str(proof.get("checkpoint", "")), Verifier.parse(verifier_key))
    try:
        index, position = int(proof["leaf_index"]), int(proof["position"])
        path = [bytes.fromhex(p) for p in proof["path"]]
        ev = proof["event"]
        hash_version = int(proof.get("hash_version", 1))
        if hash_version not in (1, 2):
            raise TransparencyError(f"unknown event hash version {hash_version}")
        recorded = datetime.fromisoformat(str(ev["recorded_at"])) if hash_version == 2 else None
        computed = event_hash(
            _hex(ev, "prev_hash", 32),
            stream=str(ev["stream"]),
            version=int(ev["version"]),
            type=str(ev["type"]),
            schema_version=int(ev["schema_version"]),
            event_id=UUID(str(ev["event_id"])),
            data_bytes=canonical(ev["data"]),
            meta_bytes=canonical(ev["meta"]),
            effective_at=datetime.fromisoformat(str(ev["effective_at"])),
            recorded_at=recorded,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise TransparencyError(f"malformed proof: {exc}") from exc
    chain = _hex(proof, "chain_hash", 32)
    if computed != chain:
        raise TransparencyError("the event's fields do not hash to the proof's chain_hash")
    leaf = leaf_hash(event_entry(position, chain))
    if not verify_inclusion(index, cp.size, leaf, path, cp.root):
        raise TransparencyError(
            f"the event at position {position} is not leaf {index} of the signed tree of size {cp.size}"
        )
    return cp


def main(argv: Sequence[str]) -> int:
    """``python -m ledger.transparency PROOF.json VERIFIER_KEY``: check a proof from ``podledger prove``."""
    import json
    import sys

    if len(argv) != 2:
        sys.stderr.write("usage: python -m ledger.transparency PROOF.json VERIFIER_KEY\n")
        return 2
    try:
        with open(argv[0], encoding="utf-8") as f:
            proof = json.load(f)
        cp = verify_event_proof(proof, argv[1])
    except (OSError, ValueError, TransparencyError) as exc:
        sys.stderr.write(f"proof rejected: {exc}\n")
        return 1
    sys.stdout.write(
        f"ok: position {proof['position']} is in the tree of size {cp.size} signed for {cp.origin}\n"
    )
    return 0


if __name__ == "__main__":
    import sys

    raise SystemExit(main(sys.argv[1:]))
