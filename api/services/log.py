"""The log: pages of events by position, as the CLI and the HTTP API show them."""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Engine

from ledger import store
from ledger.queries import log as log_q
from ledger.store import StoredEvent


def event_json(ev: StoredEvent) -> dict[str, Any]:
    """One event as the HTTP API and the event stream send it."""
    return {
        "position": ev.position,
        "stream": ev.stream,
        "version": ev.version,
        "type": ev.type,
        "schemaVersion": ev.schema_version,
        "eventId": str(ev.event_id),
        "data": ev.data,
        "meta": ev.meta,
        "recordedAt": ev.recorded_at.isoformat(),
        "effectiveAt": ev.effective_at.isoformat(),
    }


def read_events(
    engine: Engine,
    after: int,
    limit: int,
    types: list[str] | None = None,
    stream: str | None = None,
) -> list[StoredEvent]:
    """Events after ``after`` in position order; ``stream`` matches a stream or a prefix ending in ``/``."""
    if not stream:
        return store.read_all(engine, after=after, limit=limit, types=types or None)
    return log_q.read_events(engine, after, limit, types, stream)


def head(engine: Engine) -> int:
    """The newest position of the log."""
    return int(store.head(engine))


__all__ = ["event_json", "head", "read_events"]
