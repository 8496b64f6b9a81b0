"""The log: pages of events by position, as the CLI and the HTTP API show them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ledger import store
from ledger.queries import log as log_q
from ledger.store import StoredEvent

if TYPE_CHECKING:
    from ledger.database import Database


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
    db: Database,
    after: int,
    limit: int,
    types: list[str] | None = None,
    stream: str | None = None,
) -> list[StoredEvent]:
    """Events after ``after`` in position order; ``stream`` matches a stream or a prefix ending in ``/``."""
    if not stream:
        with db.connect() as conn:
            return store.read_all(conn, after=after, limit=limit, types=types or None)
    return log_q.read_events(db, after, limit, types, stream)


def head(db: Database) -> int:
    """The newest position of the log."""
    with db.connect() as conn:
        return int(store.head(conn))


__all__ = ["event_json", "head", "read_events"]
