"""Canonical JSON bytes and the sha256 hash chain over events (docs/transparency.md defines
both byte by byte).

The hash of an event covers its stream, version, type, schema version, event id, data, meta,
effective time and (hash version 2, migration 0024) the time the server recorded it, chained to
the previous event's hash: changing, removing or reordering a stored event breaks the chain from
that position on, which ``podledger verify`` reports. Events stored before migration 0024 keep
the hash of version 1 (no recorded time); ``event_hash_versions`` says where version 2 starts.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import orjson

GENESIS = b"\x00" * 32
MAX_EVENT_BYTES = 1 << 20  # 1 MiB per payload


def canonical(value: Any) -> bytes:
    """Deterministic JSON: sorted keys, no whitespace, UTF-8; rejects NaN and non-JSON types.

    A double the database's jsonb cannot give back as written (a magnitude of 10^16 or more,
    which jsonb prints as an integer, and -0.0) is written as the number jsonb keeps (the integer
    it equals, 0.0), so that the JSON read back from the log has the same canonical bytes as the
    JSON appended (otherwise such an event could never be verified). orjson writes exactly
    those doubles with ``e+`` or as ``-0.0``: other payloads pay one bytes search."""
    out = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    if b"e+" in out or b"-0.0" in out:
        return orjson.dumps(_jsonb_numbers(value), option=orjson.OPT_SORT_KEYS)
    return out


def _jsonb_numbers(value: Any) -> Any:
    if isinstance(value, float):
        if value == 0:
            return 0.0
        if abs(value) >= 1e16 and value == int(value):
            return int(value)
        return value
    if isinstance(value, dict):
        return {k: _jsonb_numbers(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonb_numbers(v) for v in value]
    return value


def iso(ts: datetime) -> str:
    """UTC, microsecond precision: the precision PostgreSQL stores, so it round-trips."""
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def event_hash(
    prev_hash: bytes,
    *,
    stream: str,
    version: int,
    type: str,
    schema_version: int,
    event_id: UUID,
    data_bytes: bytes,
    meta_bytes: bytes,
    effective_at: datetime,
    recorded_at: datetime | None = None,
) -> bytes:
    """The chain hash: ``recorded_at`` given, hash version 2; None, version 1."""
    h = hashlib.sha256(prev_hash)
    fields: list[Any] = [stream, version, type, schema_version, str(event_id), iso(effective_at)]
    if recorded_at is not None:
        fields.append(iso(recorded_at))
    header = canonical(fields)
    for part in (header, data_bytes, meta_bytes):
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return h.digest()
