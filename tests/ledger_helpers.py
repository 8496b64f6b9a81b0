"""Writes for tests: one request through the command layer, as one unit of work of its own.

The application writes through ``api.services.commands`` inside a unit of work that the edge
(CLI, HTTP, attach) commits; a test that only needs "apply these objects" or "delete these"
uses these helpers instead of repeating the unit-of-work block.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from api.services.commands import objects as commands
from ledger import store
from ledger.database import Database
from ledger.resources.models import Resource
from ledger.store import NewEvent, StoredEvent


def apply(database: Database, objects: Sequence[Resource], **kw: Any) -> commands.ApplyResult:
    """``commands.objects.apply_objects`` in a unit of work of its own, committed (also when
    admission refused: the ``AdmissionRejected`` event stays, as it does for a request)."""
    with database.unit_of_work() as uow:
        result = commands.apply_objects(uow, objects, **kw)
        uow.commit()
    return result


def delete(database: Database, refs: Sequence[tuple[str, str | None, str]], **kw: Any) -> list[StoredEvent]:
    """``commands.objects.delete_objects`` in a unit of work of its own, committed."""
    with database.unit_of_work() as uow:
        stored = commands.delete_objects(uow, refs, **kw)
        uow.commit()
    return stored


def delete_object(database: Database, kind: str, namespace: str | None, name: str, **kw: Any) -> StoredEvent:
    """``commands.objects.delete_object`` in a unit of work of its own, committed."""
    with database.unit_of_work() as uow:
        stored = commands.delete_object(uow, kind, namespace, name, **kw)
        uow.commit()
    return stored


def append_events(
    database: Database, events: Sequence[NewEvent], expected: Mapping[str, int] | None = None
) -> list[int]:
    """``ledger.store.append`` on a pooled autocommit connection: the append is its own
    transaction (one server call for one event, BEGIN/COMMIT riding with a batch); events only,
    no projection (the ledger-level append the storage tests exercise)."""
    with database.connect() as conn:
        return store.append(conn, events, expected)
