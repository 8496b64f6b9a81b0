"""Reads of the ``events`` log beyond ``ledger.store``'s ordered reads: pages with filters,
lookups by event id and time, the decisions and history of one object, and the summaries the
scenario simulator and the demo report."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, LiteralString

from ledger import events as registry
from ledger.sql import Conn, rows, scalar
from ledger.store import StoredEvent

if TYPE_CHECKING:
    from ledger.database import Database

_EVENT_COLS = (
    "position, stream, version, type, schema_version, event_id, data, meta, recorded_at, effective_at"
)
_BRIEF_COLS = "position, type, stream, data, meta, effective_at"
# events has no index by stream (migration 0018): a filter on the stream picks positions from
# event_keys' (stream, version) index (append the condition on ``k.stream`` and a ``)``)
_BY_STREAM = "position IN (SELECT k.position FROM event_keys k WHERE k.stream"


def head(conn: Conn) -> int:
    """The newest position of the log (0 when empty)."""
    return int(scalar(conn, "SELECT coalesce(max(position), 0) FROM events"))


def position_at_time(conn: Conn, when: datetime) -> int:
    """The last position whose effective time is at or before ``when`` (0 if none)."""
    pos = scalar(conn, "SELECT max(position) FROM events WHERE effective_at <= %(t)s", {"t": when})
    return int(pos or 0)


def _like_prefix(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def read_events(
    db: Database, after: int, limit: int, types: Sequence[str] | None, stream: str
) -> list[StoredEvent]:
    """Events after ``after`` in position order of one stream, or of every stream starting with
    ``stream`` when it ends in ``/``; optionally only ``types``. Payloads are upcast."""
    where = ["position > %(a)s"]
    params: dict[str, Any] = {"a": after, "lim": limit}
    if stream.endswith("/"):
        where.append(f"{_BY_STREAM} LIKE %(s)s)")
        params["s"] = _like_prefix(stream)
    else:
        where.append(f"{_BY_STREAM} = %(s)s)")
        params["s"] = stream
    if types:
        where.append("type = ANY(%(t)s)")
        params["t"] = list(types)
    q = f"SELECT {_EVENT_COLS} FROM events WHERE {' AND '.join(where)} ORDER BY position LIMIT %(lim)s"
    with db.connect() as conn:
        found = rows(conn, q, params)
    return [
        StoredEvent(
            position=r.position,
            stream=r.stream,
            version=r.version,
            type=r.type,
            schema_version=r.schema_version,
            event_id=r.event_id,
            data=registry.upcast(r.type, r.schema_version, dict(r.data)),
            meta=r.meta,
            recorded_at=r.recorded_at,
            effective_at=r.effective_at,
        )
        for r in found
    ]


def events_by_ids(conn: Conn, ids: Sequence[uuid.UUID]) -> list[Any]:
    """Rows (position, stream, version, type, data, meta) of the events with these ids, by position."""
    return rows(
        conn,
        # event_keys: the ids' one index (events is partitioned by position, migration 0016)
        "SELECT position, stream, version, type, data, meta FROM events WHERE position = ANY("
        "ARRAY(SELECT position FROM event_keys WHERE event_id = ANY(%(ids)s))) ORDER BY position",
        {"ids": list(ids)},
    )


def _brief(conn: Conn, sql: LiteralString, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [
        {"position": r[0], "type": r[1], "stream": r[2], "data": r[3], "meta": r[4], "at": r[5]}
        for r in conn.execute(sql, params)
    ]


def stream_events(conn: Conn, streams: Sequence[str], upto: int) -> list[dict[str, Any]]:
    """Events of ``streams`` up to position ``upto``, as {position, type, stream, data, meta, at}."""
    if not streams:
        return []
    return _brief(
        conn,
        f"SELECT {_BRIEF_COLS} FROM events WHERE {_BY_STREAM} = ANY(%(s)s)) AND position <= %(p)s ORDER BY position",
        {"s": list(streams), "p": upto},
    )


def group_decisions(conn: Conn, group: str, types: Sequence[str], upto: int) -> list[dict[str, Any]]:
    """Decisions of ``types`` whose ``data.group`` is ``group`` (namespace/name), up to ``upto``."""
    return _brief(
        conn,
        f"SELECT {_BRIEF_COLS} FROM events WHERE data->>'group' = %(g)s AND type = ANY(%(t)s) "
        "AND position <= %(p)s ORDER BY position",
        {"g": group, "t": list(types), "p": upto},
    )


def object_history(
    conn: Conn, kind: str, key: str, name: str, streams: Sequence[str]
) -> list[dict[str, Any]]:
    """Every event about one object: its streams, preemptions it caused, and admission
    refusals naming it (``key`` = namespace/name or name)."""
    return _brief(
        conn,
        # the positions from three indexes (event_keys by stream, the preemptor and the admission
        # refusal partial indexes), then the events by primary key: an OR of the three scans
        # the whole log since events has no index by stream (migration 0018)
        f"SELECT {_BRIEF_COLS} FROM events WHERE position IN ("
        "SELECT k.position FROM event_keys k WHERE k.stream = ANY(%(s)s) "
        "UNION ALL SELECT position FROM events WHERE type = 'PodPreempted' AND data->>'preemptor' = %(k)s "
        "UNION ALL SELECT position FROM events WHERE type = 'AdmissionRejected' AND data->'rejected' @> "
        "jsonb_build_array(jsonb_build_object('kind', CAST(%(kind)s AS text), 'name', CAST(%(n)s AS text)))) "
        "ORDER BY position",
        {"s": list(streams), "k": key, "kind": kind, "n": name},
    )


def group_timeline(conn: Conn, kind: str, ns: str, name: str, limit: int = 500) -> list[dict[str, Any]]:
    """The group's own stream, the scheduler's stream about it, and decisions naming it, as
    {position, time, type, stream, data}."""
    ref = f"{ns}/{name}"
    streams = [f"{kind.lower()}/{ns}/{name}", f"sched/{kind.lower()}/{ns}/{name}"]
    rows = conn.execute(
        "SELECT position, effective_at, type, stream, data FROM events "
        f"WHERE {_BY_STREAM} = ANY(%(s)s)) OR data->>'group' = %(g)s OR data->>'preemptor' = %(g)s "
        "ORDER BY position LIMIT %(lim)s",
        {"s": streams, "g": ref, "lim": limit},
    ).fetchall()
    return [{"position": p, "time": t, "type": typ, "stream": s, "data": d} for p, t, typ, s, d in rows]


def log_page(
    conn: Conn,
    *,
    after: int | None,
    limit: int,
    type_: str = "",
    stream: str = "",
    before: int | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """A page of the log: after a position (forward), before one (backward) or the newest;
    and the head."""
    newest = head(conn)
    where = []
    params: dict[str, Any] = {"lim": limit}
    if type_:
        where.append("type = %(t)s")
        params["t"] = type_
    if stream:
        where.append(f"{_BY_STREAM} LIKE %(s)s)")
        params["s"] = _like_prefix(stream)
    cols = "position, effective_at, stream, type, data, meta"
    if after is not None:
        where.append("position > %(a)s")
        params["a"] = after
        q = f"SELECT {cols} FROM events WHERE {' AND '.join(where)} ORDER BY position LIMIT %(lim)s"
    else:
        if before is not None:
            where.append("position < %(b)s")
            params["b"] = before
        cond = f"WHERE {' AND '.join(where)}" if where else ""
        q = f"SELECT * FROM (SELECT {cols} FROM events {cond} ORDER BY position DESC LIMIT %(lim)s) e ORDER BY position"
    found = conn.execute(q, params).fetchall()
    return [
        {"position": p, "time": t, "stream": s, "type": typ, "data": d, "meta": m}
        for p, t, s, typ, d, m in found
    ], newest


def preemptions(conn: Conn) -> list[dict[str, Any]]:
    """Every preemption as {victim, preemptor, position}, by position."""
    rows = conn.execute(
        "SELECT data->>'victim', data->>'preemptor', position FROM events WHERE type = 'PodPreempted' "
        "ORDER BY position"
    )
    return [{"victim": r[0], "preemptor": r[1], "position": r[2]} for r in rows]


def rejections(conn: Conn) -> list[dict[str, Any]]:
    """The data of every AdmissionRejected event, by position."""
    return [
        r[0]
        for r in conn.execute("SELECT data FROM events WHERE type = 'AdmissionRejected' ORDER BY position")
    ]


def count(conn: Conn) -> int:
    """How many events the log holds."""
    return int(scalar(conn, "SELECT count(*) FROM events"))


def payloads(conn: Conn) -> list[dict[str, Any]]:
    """Every event's position, stream, version, type, data, meta and effective time (ISO), by
    position: what a run decided, without the wall-clock recorded_at and the hash chain."""
    rows = conn.execute(
        "SELECT position, stream, version, type, data, meta, effective_at FROM events ORDER BY position"
    )
    return [
        {
            "position": r[0],
            "stream": r[1],
            "version": r[2],
            "type": r[3],
            "data": r[4],
            "meta": r[5],
            "effective_at": r[6].isoformat(),
        }
        for r in rows
    ]


def latest_placements(conn: Conn) -> dict[str, str | None]:
    """group (namespace/name) -> the placement of its newest PodGroupScheduled event."""
    rows = conn.execute(
        "SELECT DISTINCT ON (data->>'group') data->>'group', data->>'placement' FROM events "
        "WHERE type = 'PodGroupScheduled' ORDER BY data->>'group', position DESC"
    )
    return {row[0]: row[1] for row in rows}


def last_event_of(conn: Conn, stream: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(data, meta) of the newest event of ``stream``, or None."""
    row = conn.execute(
        "SELECT data, meta FROM events WHERE position = "
        "(SELECT k.position FROM event_keys k WHERE k.stream = %s ORDER BY k.version DESC LIMIT 1)",
        (stream,),
    ).fetchone()
    return None if row is None else (row[0], row[1])


def attach_cursor(conn: Conn, cluster: str, kind: str, scope: str) -> int | None:
    """The highest remote resourceVersion ``attach`` recorded from a watch for (cluster, kind,
    scope) (a list's items are marked ``listed``: a list stopped half-way is no resume point)."""
    value = scalar(
        conn,
        "SELECT max((meta->'attach'->>'rv')::numeric) FROM events "
        "WHERE meta ? 'attach' AND meta->'attach'->>'cluster' = %s "
        "AND meta->'attach'->>'kind' = %s AND meta->'attach'->>'scope' = %s "
        "AND NOT (meta->'attach' ? 'listed') "
        # a resourceVersion past int64 (a broken or hostile server) is no resume point
        "AND (meta->'attach'->>'rv')::numeric < 9223372036854775808",
        (cluster, kind, scope),
    )
    return None if value is None else int(value)


__all__ = [
    "attach_cursor",
    "count",
    "events_by_ids",
    "group_decisions",
    "group_timeline",
    "head",
    "last_event_of",
    "latest_placements",
    "log_page",
    "object_history",
    "payloads",
    "position_at_time",
    "preemptions",
    "read_events",
    "rejections",
    "stream_events",
]


def events_of_types(conn: Conn, types: Sequence[str], upto: int) -> list[StoredEvent]:
    """Every event of the given types up to ``upto``, upcast, in log order."""
    res = conn.execute(
        f"SELECT {_EVENT_COLS} FROM events WHERE type = ANY(%(t)s) AND position <= %(u)s ORDER BY position",
        {"t": list(types), "u": upto},
    )
    return [
        StoredEvent(
            r[0], r[1], r[2], r[3], r[4], r[5], registry.upcast(r[3], r[4], dict(r[6])), r[7], r[8], r[9]
        )
        for r in res
    ]


def observed_bindings(conn: Conn, pods: Sequence[str], upto: int) -> dict[str, dict[str, Any]]:
    """Per pod (``ns/name``), the last binding a live cluster's scheduler was seen to make up to
    ``upto`` (``PodBindingObserved``, written by ``attach --mode shadow``): node, scheduler,
    cluster, position. Pods without one are absent."""
    if not pods:
        return {}
    res = conn.execute(
        "SELECT DISTINCT ON (data->>'pod') data->>'pod', data->>'node', data->>'scheduler', "
        "data->>'cluster', position FROM events WHERE type = 'PodBindingObserved' "
        "AND data->>'pod' = ANY(%(p)s) AND position <= %(u)s ORDER BY data->>'pod', position DESC",
        {"p": list(pods), "u": upto},
    )
    return {r[0]: {"node": r[1], "scheduler": r[2], "cluster": r[3], "position": r[4]} for r in res}
