"""Binary COPY rows of the ``events`` table and their hash chain, encoded as bytes.

The batched append (``ledger.store``) prepares everything of a row that does not depend on the
stream version, the chain head or the recorded time while the server bumps the streams
(``copy_parts``), then chains the hashes with one sha256 call per event and assembles the COPY
buffer (``copy_chain``). The hash input is byte-identical to ``ledger.canonical.event_hash``
with ``recorded_at`` (hash version 2): the server's time read with the stream bump, the same for
every row of a batch (``recorded_parts``).
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ledger.canonical import canonical, iso

if TYPE_CHECKING:
    from ledger.store import _Prepared

_PG_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + b"\x00\x00\x00\x00" * 2
_COPY_TRAILER = b"\xff\xff"
_LEN4 = b"\x00\x00\x00\x04"
_pack_row_head = struct.Struct(">hi").pack  # field count (11), length of the stream
_pack_i = struct.Struct(">i").pack
_pack_len_i2 = struct.Struct(">ih").pack
_pack_len_i8 = struct.Struct(">iq").pack
_pack_q = struct.Struct(">q").pack


def _micros(ts: datetime) -> int:
    d = ts - _PG_EPOCH
    return (d.days * 86_400 + d.seconds) * 1_000_000 + d.microseconds


def copy_parts(p: _Prepared, cache: dict[Any, tuple[Any, ...]]) -> tuple[bytes, bytes, bytes, bytes, bytes]:
    """Everything of a binary COPY row and its hash input that does not depend on the stream
    version or the chain head (encoded while the server bumps the streams).

    Returns (row head up to the version's length word, row middle from type to the prev_hash
    length word, the hash header before and after the version (without the recorded time and
    the closing bracket), the hash tail over data and meta). ``cache`` holds the encodings shared by a batch (type names with their schema
    version, streams, effective times, meta payloads).
    """
    sv = p.schema_version
    typ = cache.get(p.type)
    if typ is None or typ[2] != sv:
        type_b = p.type.encode()
        # row bytes of type, schema version and the event id's length word; the type and the
        # schema version as canonical JSON between commas (hash header)
        typ = cache[p.type] = (
            _pack_i(len(type_b)) + type_b + _pack_len_i2(2, sv) + b"\x00\x00\x00\x10",
            b"," + canonical(p.type) + b",%d," % sv,
            sv,
        )
    eff = p.effective_at
    ts = cache.get(eff)
    if ts is None:
        ts = cache[eff] = (_pack_len_i8(8, _micros(eff)) + b"\x00\x00\x00\x20", iso(eff).encode())
    meta = p.meta
    m = cache.get(meta)
    if m is None:
        # jsonb: format version 1, then the JSON text; hash: length, then the bytes
        m = cache[meta] = (_pack_i(len(meta) + 1) + b"\x01" + meta, _pack_q(len(meta)) + meta)
    stream = p.stream
    st = cache.get((stream,))  # keyed by a 1-tuple: a stream name may equal a type name
    if st is None:
        stream_b = stream.encode()
        # canonical([stream, version, type, schema_version, str(event_id), iso(effective_at),
        # iso(recorded_at)]) split around the version and cut before the recorded time; a uuid
        # and an ISO time need no JSON escaping
        st = cache[(stream,)] = (
            _pack_row_head(11, len(stream_b)) + stream_b + _LEN4,
            b"[%b," % canonical(stream),
        )
    data = p.data
    n = len(data)
    id_b = p.event_id.int.to_bytes(16, "big")
    h = id_b.hex().encode()
    return (
        st[0],
        b"%b%b%b\x01%b%b%b" % (typ[0], id_b, _pack_i(n + 1), data, m[0], ts[0]),
        st[1],
        b'%b"%b-%b-%b-%b-%b","%b"' % (typ[1], h[:8], h[8:12], h[12:16], h[16:20], h[20:], ts[1]),
        b"%b%b%b" % (_pack_q(n), data, m[1]),
    )


COPY_HEADER, COPY_TRAILER = _COPY_HEADER, _COPY_TRAILER


def recorded_parts(recorded_at: datetime) -> tuple[bytes, bytes]:
    """The end of the hash header (the recorded time and the closing bracket) and the last
    field of the COPY row (``recorded_at``), for a batch recorded at ``recorded_at`` (UTC)."""
    return b',"%b"]' % iso(recorded_at).encode(), _pack_len_i8(8, _micros(recorded_at))


def copy_chain(
    prepared: Sequence[_Prepared],
    parts: Sequence[tuple[bytes, ...]],
    prev: bytes,
    recorded: tuple[bytes, bytes],
) -> bytes:
    """Chain the hashes (one sha256 call per event, same bytes as ``canonical.event_hash``) and
    assemble the binary COPY buffer."""
    return _COPY_HEADER + chain_rows(prepared, parts, prev, recorded) + _COPY_TRAILER


def chain_rows(
    prepared: Sequence[_Prepared],
    parts: Sequence[tuple[bytes, ...]],
    prev: bytes,
    recorded: tuple[bytes, bytes],
) -> bytes:
    """``copy_chain`` without the COPY header and trailer: the rows of one chunk, chained to
    ``prev`` (the last event's hash is then ``prepared[-1].hash``); ``recorded``: from
    ``recorded_parts``."""
    sha256 = hashlib.sha256
    pack_i, pack_q = _pack_i, _pack_q
    out: list[bytes] = []
    add = out.append
    rec_header, rec_field = recorded
    for p, (head, middle, pre, post, tail) in zip(prepared, parts, strict=True):
        header = b"%b%d%b%b" % (pre, p.version, post, rec_header)
        digest = sha256(b"%b%b%b%b" % (prev, pack_q(len(header)), header, tail)).digest()
        p.prev_hash = prev
        p.hash = digest
        add(b"%b%b%b%b\x00\x00\x00\x20%b%b" % (head, pack_i(p.version), middle, prev, digest, rec_field))
        prev = digest
    return b"".join(out)
