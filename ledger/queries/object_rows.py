"""The row type of the ``objects`` projection, and its plain-psycopg lister.

Kept free of SQLAlchemy: ``podledger get`` lists rows on a bare psycopg connection
(``ledger.db.read_connection``) so that its start-up loads neither SQLAlchemy nor pydantic.
``ledger.queries.objects`` re-exports ``ObjectRow`` and runs the same SELECT through SQLAlchemy.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

ROW_COLS = "kind, namespace, name, object, status, created_at, updated_position"


@dataclass(frozen=True)
class ObjectRow:
    kind: str
    namespace: str
    name: str
    object: dict[str, Any]
    status: dict[str, Any]
    created_at: datetime
    updated_position: int

    def full(self) -> dict[str, Any]:
        """The object as a user sees it: the stored manifest plus the projected status."""
        obj = dict(self.object)
        status = dict(obj.get("status") or {})
        status.update({k: v for k, v in self.status.items() if v is not None})
        if status:
            obj["status"] = status
        return obj


def select_sql(cols: str, namespace: str | None, name: str | None) -> str:
    """The SELECT of ``cols`` of the current objects of one kind (optionally one namespace and/or
    name), in (namespace, name) order; parameters ``%(k)s``, ``%(n)s``, ``%(m)s``."""
    q = f"SELECT {cols} FROM objects WHERE kind = %(k)s"
    if namespace is not None:
        q += " AND namespace = %(n)s"
    if name is not None:
        q += " AND name = %(m)s"
    return q + " ORDER BY namespace, name"


def list_objects(
    conn: Any, kind: str, namespace: str | None = None, name: str | None = None
) -> list[ObjectRow]:
    """Objects of ``kind`` (optionally one namespace and/or name) in (namespace, name) order."""
    q = select_sql(ROW_COLS, namespace, name)
    rows = conn.execute(q, {"k": kind, "n": namespace, "m": name}).fetchall()
    return [ObjectRow(*r) for r in rows]


__all__ = ["ROW_COLS", "ObjectRow", "list_objects", "select_sql"]
