"""State: every object as of a log position (time travel over the projection)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from api.services.errors import BadRequest
from api.services.explain import resolve_at
from ledger.queries import log as log_q
from ledger.queries import objects as objects_q
from ledger.queries.state import objects_at

if TYPE_CHECKING:
    from ledger.database import Database


def position_at(db: Database, at: str | None) -> int | None:
    """``at`` as a log position (digits) or an ISO-8601 time with a zone (the last position at
    or before it); None when not given. BadRequest otherwise."""
    if at is None or at == "":
        return None
    if at.isdigit():
        return int(at)
    try:
        t = datetime.fromisoformat(at.replace("Z", "+00:00"))
    except ValueError:
        raise BadRequest("at must be a log position or an ISO-8601 time") from None
    if t.tzinfo is None:
        raise BadRequest("at: give the time with a zone, e.g. 2026-01-01T00:00:00Z")
    with db.connect() as conn:
        return log_q.position_at_time(conn, t)


def state_at(db: Database, position: int | str | None) -> dict[str, Any]:
    """{position, objects: [{kind, namespace, name, object, status}]} as of ``position`` (a
    position, an ISO time, or None for the head)."""
    with db.connect() as c:
        position = resolve_at(c, position)
    with objects_at(db, position) as conn:
        objs = objects_q.all_objects(conn)
    return {"position": position, "objects": objs}


__all__ = ["position_at", "state_at"]
