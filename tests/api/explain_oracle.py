"""Test oracle of explain's reads: the same inputs read one query at a time (``ledger.queries``
objects and log queries and the three below, a past state through ``objects_at``'s temporary
view), as explain did before issue 14's one statement (``ledger.queries.explain``, the only
production path). Never imported by the product; ``tests/api/test_explain_statement.py`` and
``test_temporal.py`` compare the two, and ``bench.audit`` times it as the baseline of the one
statement."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from api.services import explain as explain_service
from api.services.errors import NotFound
from api.services.history import canonical_kind
from ledger.database import Database
from ledger.projections.temporal import quota_used as temporal_quota_used
from ledger.queries import log as log_q
from ledger.queries import objects as objects_q
from ledger.queries.state import objects_at as state_objects_at
from ledger.sql import Conn

ObjectsAt = Callable[[Database, int], AbstractContextManager[Conn]]
QuotaUsed = Callable[[Conn, str, int | None], dict[str, int]]


def composite_pods(conn: Conn, namespace: str, composite: str) -> list[tuple[str, Any, Any]]:
    """(name, manifest, status) of the pods of the PodGroups whose parent is the composite."""
    rows = conn.execute(
        "SELECT p.name, p.object, p.status FROM objects p JOIN objects g ON g.kind = 'PodGroup' "
        "AND g.namespace = p.namespace AND g.object->'spec'->>'parentCompositePodGroupName' = %(c)s "
        "AND p.object->'spec'->'schedulingGroup'->>'podGroupName' = g.name "
        "WHERE p.kind = 'Pod' AND p.namespace = %(n)s ORDER BY p.name",
        {"n": namespace, "c": composite},
    )
    return [(r[0], r[1], r[2]) for r in rows]


def namespace_quota(conn: Conn, namespace: str) -> tuple[str, Any] | None:
    """(name, manifest) of the namespace's ElasticQuota, or None."""
    row = conn.execute(
        "SELECT name, object FROM objects WHERE kind = 'ElasticQuota' AND namespace = %(n)s",
        {"n": namespace},
    ).fetchone()
    return (row[0], row[1]) if row else None


def preemptions_by(conn: Conn, preemptors: list[str], upto: int) -> list[dict[str, Any]]:
    """PodPreempted events whose preemptor is one of ``preemptors``, up to ``upto``."""
    if not preemptors:
        return []
    rows = conn.execute(
        "SELECT position, type, stream, data, meta, effective_at FROM events WHERE type = 'PodPreempted' "
        "AND data->>'preemptor' = ANY(%(k)s) AND position <= %(p)s ORDER BY position",
        {"k": preemptors, "p": upto},
    )
    return [
        {"position": r[0], "type": r[1], "stream": r[2], "data": r[3], "meta": r[4], "at": r[5]} for r in rows
    ]


def gather(
    database: Database,
    conn0: Conn,
    kind: str,
    namespace: str,
    name: str,
    at: int | str | None,
    *,
    objects_at: ObjectsAt = state_objects_at,
    quota_used: QuotaUsed = temporal_quota_used,
) -> dict[str, Any]:
    """What ``explain_service.read_inputs`` reads, one query at a time: the log on ``conn0``, a
    past state on a connection of its own (its temporary view lives in a rolled-back
    transaction); ``observed`` None (the shadow section then reads the observations itself)."""
    key = f"{namespace}/{name}"
    head = log_q.head(conn0)
    pos = explain_service.resolve_at(conn0, at)
    with objects_at(database, pos) if pos < head else nullcontext(conn0) as conn:
        row = objects_q.get_object(conn, kind, namespace, name)
        if row is None:
            raise NotFound(f"{kind} {key} not found at position {pos}")
        obj, status, _created_at = row
        if kind == "Pod":
            pods = [(name, obj, status)]
            group = ((obj.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")
        else:
            group = name if kind == "PodGroup" else None
            if kind == "PodGroup":
                pods = objects_q.group_pods(conn, namespace, name)
            else:
                pods = composite_pods(conn, namespace, name)
        quota = namespace_quota(conn, namespace)
        used = quota_used(conn, namespace, pos if pos < head else None) if quota is not None else {}

    subject = f"{namespace}/{group}" if group else None
    types = explain_service.GROUP_DECISIONS
    if kind == "CompositePodGroup":
        # the root's PodGroupUnschedulable/Scheduled carry ``group`` = the composite's key
        decisions = sorted(
            log_q.stream_events(conn0, [f"sched/compositepodgroup/{key}"], pos)
            + log_q.group_decisions(conn0, key, types, pos),
            key=lambda e: e["position"],
        )
    elif subject:
        decisions = log_q.group_decisions(conn0, subject, types, pos)
    else:
        decisions = []
    pod_keys = [f"{namespace}/{p[0]}" for p in pods]
    pod_events = log_q.stream_events(conn0, [f"sched/pod/{k}" for k in pod_keys], pos)
    preemptor_keys = [subject] if subject else []
    if kind in ("Pod", "CompositePodGroup"):
        preemptor_keys.append(key)
    preempted = preemptions_by(conn0, preemptor_keys, pos)
    return {
        "head": pos,
        "object": obj,
        "status": status,
        "pods": pods,
        "quota": quota,
        "used": used,
        "decisions": decisions,
        "pod_events": pod_events,
        "preempted": preempted,
        "observed": None,
    }


def explain_by_queries(
    database: Database,
    kind: str,
    namespace: str,
    name: str,
    *,
    at: int | str | None = None,
    nodes: bool = False,
    objects_at: ObjectsAt = state_objects_at,
    quota_used: QuotaUsed = temporal_quota_used,
) -> dict[str, Any]:
    """``explain_service.explain`` of a Pod, PodGroup or CompositePodGroup with its inputs read
    by ``gather`` (the document is built by the same ``explain_service.document``)."""
    kind = canonical_kind(kind)
    with database.connect() as conn:
        inputs = gather(
            database, conn, kind, namespace, name, at, objects_at=objects_at, quota_used=quota_used
        )
        return explain_service.document(database, conn, kind, namespace, name, inputs, nodes)
