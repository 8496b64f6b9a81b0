"""One request, one transaction: append events and update the inline projection together."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy.engine import Connection, Engine

from ledger.projections.current import project
from ledger.store import NewEvent, StoredEvent, append_stored


def write(
    target: Engine | Connection,
    events: Sequence[NewEvent],
    expected_versions: Mapping[str, int] | None = None,
) -> list[StoredEvent]:
    """Append ``events`` and fold them into ``objects`` atomically; returns the stored events.

    An idempotent re-send (every event id already stored) returns the original positions and
    changes nothing.
    """
    if isinstance(target, Engine):
        with target.begin() as conn:
            return write(conn, events, expected_versions)
    stored, new = append_stored(target, events, expected_versions)
    if new:
        project(target, stored)
    return stored
