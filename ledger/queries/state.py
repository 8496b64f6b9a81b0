"""The ``objects`` projection as of a past position (the temporal projection, rolled back after)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ledger.projections.temporal import shadow_objects
from ledger.queries.object_rows import ObjectRow
from ledger.sql import Conn

if TYPE_CHECKING:
    from ledger.database import Database


@contextmanager
def objects_at(db: Database, position: int) -> Iterator[Conn]:
    """A connection on which ``objects`` is the projection as of ``position`` (rolled back after).

    The view ``podledger_as_of.objects`` over the temporal projection (``object_versions``)
    shadows the real table for this transaction only (``shadow_objects``: transaction-local
    position and search_path): no fold, whatever the position, and every query of
    ``ledger.queries.objects`` answers as of that position on this connection.
    """
    with db.connect() as conn:
        conn.autocommit = False
        try:
            shadow_objects(conn, position)
            yield conn
        finally:
            conn.rollback()
            conn.autocommit = True


@contextmanager
def objects_now(db: Database) -> Iterator[Conn]:
    """A plain connection on the live projection (the counterpart of ``objects_at``)."""
    with db.connect() as conn:
        yield conn


# What a ``get`` table shows and its selectors read, cut out by the server as text (JSON only
# where it stays small or rare): a pod's group (``-o wide``), the labels (``-l``), a node's
# unschedulable flag; the phase, gate, node, nomination and (not for pods) the conditions. The
# whole rows are ~0.6 kB of JSON per pod: for 10,000 pods their transfer and decoding cost ~7x
# this, and the same fields as one small JSON object per row ~2x.
_LEAN = (
    "kind, namespace, name, created_at, valid_from, "
    "object->'spec'->'schedulingGroup'->>'podGroupName', object->'metadata'->'labels', "
    "object->'spec'->>'unschedulable', status->>'phase', NULLIF(status->'gated', 'null'), "
    "status->>'nodeName', "
    "status->>'nominatedNodeName', CASE WHEN kind <> 'Pod' THEN status->'conditions' END"
)
_WHOLE = "kind, namespace, name, object, status, created_at, valid_from"


def _lean_row(r: Any) -> ObjectRow:
    kind, ns, name, created_at, pos, group, labels, unschedulable, phase, gated, node, nominated, conds = r
    spec: dict[str, Any] = {}
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
    if unschedulable == "true":
        spec["unschedulable"] = True
    obj: dict[str, Any] = {"spec": spec}
    if labels:
        obj["metadata"] = {"labels": labels}
    status: dict[str, Any] = {}
    if phase is not None:
        status["phase"] = phase
    if gated is not None:
        status["gated"] = gated
    if node is not None:
        status["nodeName"] = node
    if nominated is not None:
        status["nominatedNodeName"] = nominated
    if conds is not None:
        status["conditions"] = conds
    return ObjectRow(kind, ns, name, obj, status, created_at, pos)


def list_objects_at(
    conn: Conn,
    position: int,
    kind: str,
    namespace: str | None = None,
    name: str | None = None,
    *,
    lean: bool = True,
) -> list[ObjectRow]:
    """``ledger.queries.objects.list_objects`` as of ``position``, read from the temporal
    projection directly (no temporary view, no transaction). ``lean``: each row's ``object`` and
    ``status`` hold only what ``get``'s table shows and its selectors read (see above); else the
    stored manifest and status whole."""
    p = int(position)  # a literal: the planner sees the bound
    q = (
        f"SELECT {_LEAN if lean else _WHOLE} FROM object_versions "
        f"WHERE kind = %(k)s AND valid_from <= {p} AND valid_to > {p}"
    )
    if namespace is not None:
        q += " AND namespace = %(n)s"
    if name is not None:
        q += " AND name = %(m)s"
    q += " ORDER BY namespace, name"
    rows = conn.execute(q, {"k": kind, "n": namespace, "m": name}).fetchall()
    return [_lean_row(r) for r in rows] if lean else [ObjectRow(*r) for r in rows]


__all__ = ["list_objects_at", "objects_at", "objects_now"]
