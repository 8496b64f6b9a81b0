"""Reads of the ``objects`` projection (and the ``streams`` versions that go with them)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import orjson

from ledger.queries.object_rows import ROW_COLS, ObjectRow, list_objects, select_sql
from ledger.simple_query import json_arg, run, text_arg
from ledger.sql import Conn

_ROW_COLS = ROW_COLS


def _select(conn: Conn, cols: str, kind: str, namespace: str | None, name: str | None) -> list[Sequence[Any]]:
    """``cols`` of the current objects of ``kind`` (optionally one namespace and/or name), in
    (namespace, name) order."""
    q = select_sql(cols, namespace, name)
    params: dict[str, Any] = {"k": kind, "n": namespace, "m": name}
    return conn.execute(q, params).fetchall()


def get_object(
    conn: Conn, kind: str, namespace: str, name: str
) -> tuple[dict[str, Any], dict[str, Any], datetime] | None:
    """(manifest, projected status, created_at) of one object, or None."""
    row = conn.execute(
        "SELECT object, status, created_at FROM objects WHERE kind = %(k)s AND namespace = %(n)s AND name = %(m)s",
        {"k": kind, "n": namespace, "m": name},
    ).fetchone()
    return (row[0], row[1], row[2]) if row else None


def manifest(conn: Conn, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
    """The stored manifest of one object, or None."""
    row = conn.execute(
        "SELECT object FROM objects WHERE kind = %(k)s AND namespace = %(n)s AND name = %(m)s",
        {"k": kind, "n": namespace, "m": name},
    ).fetchone()
    return row[0] if row else None


def manifests(conn: Conn, kind: str) -> list[dict[str, Any]]:
    """Every stored manifest of ``kind`` in (namespace, name) order."""
    rows = conn.execute("SELECT object FROM objects WHERE kind = %(k)s ORDER BY namespace, name", {"k": kind})
    return [r[0] for r in rows]


def manifests_with_versions(
    conn: Conn, keys: Sequence[tuple[str, str, str]], streams: Sequence[str], preloaded_kind: str
) -> list[tuple[str, str, str, dict[str, Any] | None, str | None, int | None]]:
    """In ONE statement: for each key ``(kind, namespace, name)`` its manifest (or None) and
    the version of its stream (0 = none), plus every object of ``preloaded_kind`` (with stream
    and version None). Reading both together makes the versions an append expects the ones of
    the state admission judged.

    This read starts every apply/delete request: one simple-query message on the raw psycopg
    connection (with the transaction's ``BEGIN`` when none is open: one round trip, no
    parameter adaptation), calling ``ledger_admission_read`` (migration 0022), whose plan is
    made once per session and pinned to primary-key probes."""
    doc = [{"k": k, "n": n, "m": m, "s": s} for (k, n, m), s in zip(keys, streams, strict=True)]
    sql = b"SELECT * FROM ledger_admission_read(%b, %b)" % (json_arg(doc), text_arg(preloaded_kind))
    res = run(conn, sql)[-1]
    get, loads = res.get_value, orjson.loads
    out: list[tuple[str, str, str, dict[str, Any] | None, str | None, int | None]] = []
    for i in range(res.ntuples):
        obj, stream, version = get(i, 3), get(i, 4), get(i, 5)
        out.append(
            (
                bytes(get(i, 0) or b"").decode(),
                bytes(get(i, 1) or b"").decode(),
                bytes(get(i, 2) or b"").decode(),
                None if obj is None else loads(obj),
                None if stream is None else bytes(stream).decode(),
                None if version is None else int(version),
            )
        )
    return out


def stream_versions(conn: Conn, streams: Sequence[str]) -> dict[str, int]:
    """Version of each existing stream of ``streams`` (missing streams are left out)."""
    rows = conn.execute("SELECT stream, version FROM streams WHERE stream = ANY(%(s)s)", {"s": list(streams)})
    return {s: int(v) for s, v in rows}


def lock_stream_version(conn: Conn, stream: str) -> int:
    """The stream's version (0 = none), its row locked until the transaction ends."""
    row = conn.execute(
        "SELECT version FROM streams WHERE stream = %(s)s FOR UPDATE", {"s": stream}
    ).fetchone()
    return int(row[0]) if row else 0


# Status filters of a list page: a pod's phase; the reason of a group's InitiallyScheduled
# condition ("Pending" when there is none).
STATUS_SQL = {
    "pod": "coalesce(status->>'phase', 'Pending')",
    "group": (
        "coalesce((SELECT c->>'reason' FROM jsonb_array_elements(coalesce(status->'conditions', '[]')) c "
        "WHERE c->>'type' LIKE '%%InitiallyScheduled' LIMIT 1), 'Pending')"
    ),
}


def list_page(
    conn: Conn,
    kind: str,
    *,
    namespace: str | None,
    status_of: str | None,
    status: str | None,
    selector: Sequence[tuple[str, str, str | None]],
    limit: int,
    after: tuple[str, str] | None,
) -> tuple[list[ObjectRow], tuple[str, str] | None]:
    """One page of at most ``limit`` objects after ``after`` (namespace, name), and the key to
    continue from (None on the last page). ``status_of`` picks the STATUS_SQL expression that
    ``status`` is compared with (case-insensitive); ``selector`` holds (label, op, value) with op
    one of ``=``, ``!=``, ``exists``, ``!exists``."""
    where = ["kind = %(k)s"]
    params: dict[str, Any] = {"k": kind, "lim": limit + 1}
    if namespace is not None:
        where.append("namespace = %(ns)s")
        params["ns"] = namespace
    if status and status_of:
        where.append(f"lower({STATUS_SQL[status_of]}) = lower(%(st)s)")
        params["st"] = status
    labels = "coalesce(object->'metadata'->'labels', '{}')"
    for i, (k, op, v) in enumerate(selector):
        params[f"lk{i}"] = k
        if op == "=":
            where.append(f"{labels}->>%(lk{i})s = %(lv{i})s")
            params[f"lv{i}"] = v
        elif op == "!=":
            where.append(f"{labels}->>%(lk{i})s IS DISTINCT FROM %(lv{i})s")
            params[f"lv{i}"] = v
        elif op == "exists":
            where.append(f"{labels} ? %(lk{i})s")
        else:
            where.append(f"NOT ({labels} ? %(lk{i})s)")
    if after is not None:
        where.append("(namespace, name) > (%(an)s, %(am)s)")
        params["an"], params["am"] = after
    q = f"SELECT {_ROW_COLS} FROM objects WHERE {' AND '.join(where)} ORDER BY namespace, name LIMIT %(lim)s"
    rows = [ObjectRow(*r) for r in conn.execute(q, params)]
    nxt = None
    if len(rows) > limit:
        rows = rows[:limit]
        nxt = (rows[-1].namespace, rows[-1].name)
    return rows, nxt


def group_pods(conn: Conn, namespace: str, group: str) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(name, manifest, status) of the pods of PodGroup ``namespace/group``, by name."""
    rows = conn.execute(
        "SELECT name, object, status FROM objects WHERE kind = 'Pod' AND namespace = %(n)s "
        "AND object->'spec'->'schedulingGroup'->>'podGroupName' = %(g)s ORDER BY name",
        {"n": namespace, "g": group},
    )
    return [(r[0], r[1], r[2]) for r in rows]


def child_groups(conn: Conn, namespace: str, composite: str) -> list[str]:
    """Names of the PodGroups whose parent is CompositePodGroup ``namespace/composite``."""
    rows = conn.execute(
        "SELECT name FROM objects WHERE kind = 'PodGroup' AND namespace = %(n)s "
        "AND object->'spec'->>'parentCompositePodGroupName' = %(c)s ORDER BY name",
        {"n": namespace, "c": composite},
    )
    return [r[0] for r in rows]


def bound_pod_specs(conn: Conn, namespace: str | None = None) -> list[tuple[str, str, dict[str, Any]]]:
    """(namespace, node, spec) of every bound pod (of one namespace if given)."""
    q = (
        "SELECT namespace, status->>'nodeName', object->'spec' FROM objects "
        "WHERE kind = 'Pod' AND status->>'phase' = 'Bound'"
    )
    params: dict[str, Any] = {}
    if namespace is not None:
        q += " AND namespace = %(n)s"
        params["n"] = namespace
    return [(ns, node or "", spec or {}) for ns, node, spec in conn.execute(q, params)]


def all_objects(conn: Conn) -> list[dict[str, Any]]:
    """Every object as {kind, namespace, name, object, status}, by (kind, namespace, name)."""
    rows = conn.execute(
        "SELECT kind, namespace, name, object, status FROM objects ORDER BY kind, namespace, name"
    )
    return [{"kind": r[0], "namespace": r[1], "name": r[2], "object": r[3], "status": r[4]} for r in rows]


def controlled_by(conn: Conn, namespace: str, owner_kind: str, owner_name: str) -> list[tuple[str, str]]:
    """``(kind, name)`` of the objects of ``namespace`` whose controller ownerReference is
    ``owner_kind``/``owner_name`` (what a garbage collector deletes with the owner), by kind and name."""
    ref = [{"kind": owner_kind, "name": owner_name, "controller": True}]
    rows = conn.execute(
        "SELECT kind, name FROM objects WHERE namespace = %(n)s "
        "AND object->'metadata'->'ownerReferences' @> CAST(%(ref)s AS jsonb) ORDER BY kind, name",
        {"n": namespace, "ref": json.dumps(ref)},
    )
    return [(r[0], r[1]) for r in rows]


__all__ = [
    "controlled_by",
    "ObjectRow",
    "all_objects",
    "bound_pod_specs",
    "child_groups",
    "get_object",
    "group_pods",
    "list_objects",
    "list_page",
    "lock_stream_version",
    "manifest",
    "manifests",
    "manifests_with_versions",
    "stream_versions",
]


# --------------------------------------------------------------------- rows with their positions

PROJECTION_COLS = (
    "kind",
    "namespace",
    "name",
    "uid",
    "object",
    "status",
    "created_position",
    "updated_position",
    "created_at",
    "updated_at",
)


def projection_rows(
    conn: Conn, kind: str, namespace: str | None = None, name: str | None = None
) -> list[dict[str, Any]]:
    """Current objects of a kind with uid and created/updated positions and times, in
    (namespace, name) order (the Kubernetes API's resourceVersion and uid come from them)."""
    rows = _select(conn, ", ".join(PROJECTION_COLS), kind, namespace, name)
    return [dict(zip(PROJECTION_COLS, r, strict=True)) for r in rows]


def namespaces_in_use(conn: Conn) -> list[tuple[str, Any]]:
    """Namespaces that hold objects (podledger has no Namespace objects): (name, first seen)."""
    res = conn.execute(
        "SELECT namespace, min(created_at) FROM objects WHERE namespace <> '' GROUP BY 1 ORDER BY 1"
    )
    return [(r[0], r[1]) for r in res]


def group_pod_counts(conn: Conn) -> dict[tuple[str, str], tuple[int, int]]:
    """(namespace, podGroupName) -> (pods, bound pods) over the current pods."""
    res = conn.execute(
        "SELECT namespace, object->'spec'->'schedulingGroup'->>'podGroupName' AS g, count(*), "
        "count(*) FILTER (WHERE status->>'phase' = 'Bound') FROM objects WHERE kind = 'Pod' "
        "AND object->'spec'->'schedulingGroup'->>'podGroupName' IS NOT NULL GROUP BY 1, 2"
    )
    return {(r[0], r[1]): (int(r[2]), int(r[3])) for r in res}
