"""An outside verifier of podledger's proofs, written from docs/transparency.md alone.

It imports nothing of podledger: the standard library (``hashlib``, ``json``, ``base64``,
``datetime``) and ``cryptography`` for Ed25519. Given a proof document printed by ``podledger
prove`` and the verifier key, ``verify_proof`` checks that the checkpoint is signed by that key,
that the event's fields hash to the chain hash (docs: "The event hash, byte by byte"), and that
the leaf of that hash at that position is in the signed tree (RFC 9162 §2.1.3.2). Any failure
raises ``ProofError``.
"""

from __future__ import annotations

import base64
import hashlib
from datetime import UTC, datetime
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


class ProofError(Exception):
    pass


# -- canonical JSON ------------------------------------------------------------------------------

_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _string(s: str) -> str:
    out = []
    for ch in s:
        if ch in _SHORT:
            out.append(_SHORT[ch])
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _double(x: float) -> str:
    """The doc's rule: shortest round-trip digits; fixed notation for -5 <= k < 16, else
    d[.ddd]e±k."""
    if x != x or x in (float("inf"), float("-inf")):
        raise ProofError("JSON has no NaN or infinity")
    sign = "-" if str(x).startswith("-") else ""
    if x == 0:
        return sign + "0.0"
    text = repr(abs(x))  # the shortest digits that read back as x
    mantissa, _, exp = text.partition("e")
    whole, _, frac = mantissa.partition(".")
    all_digits = whole + frac
    zeros = len(all_digits) - len(all_digits.lstrip("0"))
    k = len(whole) - zeros - 1 + (int(exp) if exp else 0)
    digits = all_digits.lstrip("0").rstrip("0") or "0"
    if -5 <= k < 16:
        if k >= 0:
            return f"{sign}{digits[: k + 1].ljust(k + 1, '0')}.{digits[k + 1 :] or '0'}"
        return f"{sign}0.{'0' * (-k - 1)}{digits}"
    rest = "." + digits[1:] if len(digits) > 1 else ""
    return f"{sign}{digits[0]}{rest}e{'+' if k >= 0 else '-'}{abs(k)}"


def _json(v: Any) -> str:
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        if not -(2**63) <= v < 2**64:
            raise ProofError("an integer outside -2^63 .. 2^64-1")
        return str(v)
    if isinstance(v, float):
        return _double(v)
    if isinstance(v, str):
        return _string(v)
    if isinstance(v, list):
        return "[" + ",".join(_json(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(_string(k) + ":" + _json(v[k]) for k in sorted(v)) + "}"
    raise ProofError(f"not JSON: {type(v).__name__}")


def canonical(v: Any) -> bytes:
    return _json(v).encode("utf-8")


# -- the event hash ------------------------------------------------------------------------------------


def hash_time(text: str) -> str:
    """A time as the hash writes it: UTC, six digits of microseconds, ``Z``."""
    t = datetime.fromisoformat(text).astimezone(UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond:06d}Z"


def event_hash(event: dict[str, Any], hash_version: int) -> bytes:
    header: list[Any] = [
        event["stream"],
        event["version"],
        event["type"],
        event["schema_version"],
        event["event_id"],
        hash_time(event["effective_at"]),
    ]
    if hash_version == 2:
        header.append(hash_time(event["recorded_at"]))
    elif hash_version != 1:
        raise ProofError(f"unknown hash version {hash_version}")
    h = hashlib.sha256(bytes.fromhex(event["prev_hash"]))
    for part in (canonical(header), canonical(event["data"]), canonical(event["meta"])):
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return h.digest()


# -- the tree -------------------------------------------------------------------------------------------


def leaf_hash(position: int, chain_hash: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + position.to_bytes(8, "big") + chain_hash).digest()


def _node(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def root_from_inclusion(index: int, size: int, leaf: bytes, path: list[bytes]) -> bytes:
    """RFC 9162 §2.1.3.2, step by step."""
    if index >= size:
        raise ProofError("leaf index outside the tree")
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            raise ProofError("inclusion path too long")
        if fn % 2 == 1 or fn == sn:
            r = _node(p, r)
            if fn % 2 == 0:
                while fn % 2 == 0 and fn != 0:
                    fn //= 2
                    sn //= 2
        else:
            r = _node(r, p)
        fn //= 2
        sn //= 2
    if sn != 0:
        raise ProofError("inclusion path too short")
    return r


# -- the checkpoint ----------------------------------------------------------------------------------


def open_checkpoint(note: str, verifier_key: str) -> tuple[str, int, bytes]:
    """(origin, tree size, root) of a note signed by ``verifier_key`` (C2SP signed note)."""
    name, key_id_hex, key_b64 = verifier_key.strip().split("+", 2)  # base64 may hold "+"
    raw = base64.b64decode(key_b64)
    if len(raw) != 33 or raw[0] != 1:
        raise ProofError("not an Ed25519 verifier key")
    key_id = hashlib.sha256(name.encode() + b"\n" + raw).digest()[:4]
    if key_id.hex() != key_id_hex:
        raise ProofError("the key id does not match the key")
    body, sep, signatures = note.partition("\n\n")
    if not sep:
        raise ProofError("a note is a body, an empty line and signature lines")
    body += "\n"
    signed = False
    for line in signatures.split("\n"):
        if not line:
            continue
        dash, signer, sig_b64 = line.split(" ")
        sig = base64.b64decode(sig_b64)
        if dash != "\u2014" or signer != name or sig[:4] != key_id:
            continue
        try:
            Ed25519PublicKey.from_public_bytes(raw[1:]).verify(sig[4:], body.encode())
        except InvalidSignature:
            raise ProofError("bad signature") from None
        signed = True
    if not signed:
        raise ProofError("not signed by this key")
    origin, size, root, _end = body.split("\n")
    return origin, int(size), base64.b64decode(root)


def verify_proof(proof: dict[str, Any], verifier_key: str) -> tuple[str, int]:
    """Check a ``podledger prove`` document; returns (origin, tree size) of its checkpoint."""
    origin, size, root = open_checkpoint(proof["checkpoint"], verifier_key)
    chain_hash = bytes.fromhex(proof["chain_hash"])
    if event_hash(proof["event"], int(proof.get("hash_version", 1))) != chain_hash:
        raise ProofError("the event's fields do not give its chain hash")
    leaf = leaf_hash(int(proof["position"]), chain_hash)
    path = [bytes.fromhex(p) for p in proof["path"]]
    if root_from_inclusion(int(proof["leaf_index"]), size, leaf, path) != root:
        raise ProofError("the leaf is not in the signed tree")
    return origin, size
