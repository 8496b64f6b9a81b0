"""Writes of the benchmarks: one apply or delete request through the command layer, as one unit
of work of its own (what ``podledger apply`` / ``delete`` does per request)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from api.services.commands.objects import ApplyResult
    from ledger.database import Database
    from ledger.store import StoredEvent


def apply(database: Database, objects: Sequence[Any], **kw: Any) -> ApplyResult:
    """``apply_objects`` in a unit of work, committed (a refusal commits its AdmissionRejected)."""
    from api.services.commands.objects import apply_objects

    with database.unit_of_work() as uow:
        result = apply_objects(uow, objects, **kw)
        uow.commit()
    return result


def delete(database: Database, refs: Sequence[tuple[str, str | None, str]], **kw: Any) -> list[StoredEvent]:
    """``delete_objects`` in a unit of work, committed."""
    from api.services.commands.objects import delete_objects

    with database.unit_of_work() as uow:
        stored = delete_objects(uow, refs, **kw)
        uow.commit()
    return stored
