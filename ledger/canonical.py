"""Canonical JSON bytes and the sha256 hash chain over events.

The hash of an event covers its stream, version, type, schema version, event id, data, meta
and effective time, chained to the previous event's hash: changing, removing or reordering a
stored event breaks the chain from that position on, which ``podledger verify`` reports.
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
    """Deterministic JSON: sorted keys, no whitespace, UTF-8; rejects NaN and non-JSON types."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


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
) -> bytes:
    h = hashlib.sha256(prev_hash)
    header = canonical([stream, version, type, schema_version, str(event_id), iso(effective_at)])
    for part in (header, data_bytes, meta_bytes):
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return h.digest()
