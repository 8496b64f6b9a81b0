"""Read side of the temporal projection: the state at any log position without a fold.

``object_versions`` holds every version of every object with the position range it was current
(``valid_from <= P < valid_to``; the current version ends at ``OPEN``), and ``quota_usage`` the
totals of the requests of a namespace's bound pods after every change. The fold that maintains
``objects`` writes both in the same transaction (ledger/projections/current.py), and the rebuild
re-derives them from the log.

- ``shadow_objects(conn, P)``: for the rest of the caller's transaction, ``objects`` is the view
  ``podledger_as_of.objects`` (migration 0024: the search_path names its schema first) showing
  the projection as of P, so any query written against the live ``objects`` runs unchanged
  against the past; the planner pushes its filters down to the version indexes. (It was a
  temporary view; the application role has no TEMP privilege any more.)
- ``objects_at_position(conn, P, kind, namespace, name)``: the rows themselves.
- ``quota_used(conn, namespace, P)``: {resource: total} over the namespace's bound pods.
- ``fold_objects_at`` and ``scan_quota_used``: the full fold and the namespace scan these replace,
  kept as the oracle the tests compare against.
"""

from __future__ import annotations

from typing import Any

from ledger import store
from ledger.projections.current import OPEN, project, usage_totals
from ledger.resources.models import pod_effective_requests
from ledger.sql import Conn, dicts, scalar

__all__ = [
    "OPEN",
    "fold_objects_at",
    "objects_at_position",
    "quota_used",
    "scan_quota_used",
    "shadow_objects",
]

_COLUMNS = (
    "kind, namespace, name, uid, object, status, created_position, valid_from AS updated_position, "
    "created_at, updated_at"
)


def _alive(position: int) -> str:
    p = int(position)  # an int literal: the planner sees the bound and picks the index for it
    return f"valid_from <= {p} AND valid_to > {p}"


def shadow_objects(conn: Conn, position: int) -> None:
    """Make ``objects`` the projection as of ``position`` for the rest of the caller's transaction
    (transaction-local settings: the position and a search_path naming ``podledger_as_of``
    first; they end with the transaction)."""
    conn.execute(
        "SELECT set_config('podledger.as_of_position', %(p)s, true), "
        "set_config('search_path', 'podledger_as_of, ' || current_setting('search_path'), true)",
        {"p": str(int(position))},
    )


def objects_at_position(
    conn: Conn,
    position: int,
    kind: str | None = None,
    namespace: str | None = None,
    name: str | None = None,
) -> list[dict[str, Any]]:
    """The rows of ``objects`` as of ``position`` (filtered), ordered by kind, namespace, name."""
    q = f"SELECT {_COLUMNS} FROM public.object_versions WHERE {_alive(position)}"
    params: dict[str, Any] = {}
    for col, val in (("kind", kind), ("namespace", namespace), ("name", name)):
        if val is not None:
            q += f" AND {col} = %({col})s"
            params[col] = val
    q += " ORDER BY kind, namespace, name"
    return dicts(conn, q, params)


def quota_used(conn: Conn, namespace: str, position: int | None = None) -> dict[str, int]:
    """Requests of the pods bound in ``namespace`` as of ``position`` (None: now), summed per
    resource; a resource appears while at least one bound pod requests it."""
    q = "SELECT used FROM quota_usage WHERE namespace = %(n)s"
    params: dict[str, Any] = {"n": namespace}
    if position is not None:
        q += " AND valid_from <= %(p)s"
        params["p"] = int(position)
    used = scalar(conn, q + " ORDER BY valid_from DESC LIMIT 1", params)
    return usage_totals(used)


# ----------------------------------------------------------------------------- oracles


def fold_objects_at(conn: Conn, position: int) -> None:
    """The full fold from position 0 into a temporary ``objects`` table (in the caller's
    transaction, dropped at its end): what ``shadow_objects`` replaces, O(position)."""
    conn.execute("CREATE TEMP TABLE objects (LIKE public.objects INCLUDING ALL) ON COMMIT DROP")
    after = 0
    while after < position:
        batch = [e for e in store.read_all(conn, after=after, limit=5000) if e.position <= position]
        if not batch:
            break
        project(conn, batch, temporal=False)
        after = batch[-1].position


def scan_quota_used(conn: Conn, namespace: str) -> dict[str, int]:
    """Quota use totalled over every bound pod of the namespace in ``objects`` (what
    ``quota_used`` replaces)."""
    used: dict[str, int] = {}
    for r in conn.execute(
        "SELECT object FROM objects WHERE kind = 'Pod' AND namespace = %s AND status->>'phase' = 'Bound'",
        (namespace,),
    ):
        for k, v in pod_effective_requests({"spec": r[0].get("spec") or {}}).items():
            used[k] = used.get(k, 0) + v
    return used
