"""Everything live ``explain`` reads, in one statement (issue 14: live explain p99 <= 5 ms).

The multi-query path (``objects``/``log`` queries, one round trip each) costs about a millisecond
per round trip on a loaded machine; here the head, the object, its pods, the namespace's quota and
usage, the group's decisions, the pods' scheduler streams, the preemptions they caused and the cluster's observed bindings come
back as one JSON document built by the server, from one snapshot (so every part is as of the same
head, which the multi-query path only approximates). The shapes are those of the per-query
functions: ``tests/api/explain_oracle.py`` reads the same one query at a time, the oracle the
tests compare this statement with.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import orjson

from ledger.projections.current import usage_totals
from ledger.sql import Conn, scalar

_BRIEF = (
    "json_build_object('position', e.position, 'type', e.type, 'stream', e.stream, 'data', e.data, "
    "'meta', e.meta, 'at', e.effective_at)"
)
_GROUP_OF_POD = "(SELECT object->'spec'->'schedulingGroup'->>'podGroupName' FROM o)"
_PODS = {
    "Pod": "SELECT name, object, status FROM objects WHERE kind = 'Pod' AND namespace = %(n)s AND name = %(m)s",
    "PodGroup": (
        "SELECT name, object, status FROM objects WHERE kind = 'Pod' AND namespace = %(n)s "
        "AND object->'spec'->'schedulingGroup'->>'podGroupName' = %(m)s"
    ),
    "CompositePodGroup": (
        "SELECT p.name, p.object, p.status FROM objects p JOIN objects g ON g.kind = 'PodGroup' "
        "AND g.namespace = p.namespace AND g.object->'spec'->>'parentCompositePodGroupName' = %(m)s "
        "AND p.object->'spec'->'schedulingGroup'->>'podGroupName' = g.name "
        "WHERE p.kind = 'Pod' AND p.namespace = %(n)s"
    ),
}
_DECISIONS = {
    # the group whose decisions explain reads: the pod's PodGroup, the PodGroup itself, or the
    # CompositePodGroup's own stream and the root decisions whose ``group`` is the composite
    # (a root's PodGroupUnschedulable/Scheduled carry the composite's key)
    "Pod": f"e.data->>'group' = %(n)s || '/' || {_GROUP_OF_POD} AND e.type = ANY(%(t)s)",
    "PodGroup": "e.data->>'group' = %(n)s || '/' || %(m)s AND e.type = ANY(%(t)s)",
    "CompositePodGroup": "(e.position IN (SELECT k.position FROM event_keys k "
    "WHERE k.stream = 'sched/compositepodgroup/' || %(n)s || '/' || %(m)s) "
    "OR (e.data->>'group' = %(n)s || '/' || %(m)s AND e.type = ANY(%(t)s)))",
}
_PREEMPTORS = {
    "Pod": f"ARRAY[%(n)s || '/' || %(m)s, %(n)s || '/' || {_GROUP_OF_POD}]",
    "PodGroup": "ARRAY[%(n)s || '/' || %(m)s]",
    "CompositePodGroup": "ARRAY[%(n)s || '/' || %(m)s]",
}


def _statement(kind: str, at: int | None = None) -> str:
    """The live statement, or (``at``) the same as of position ``at``: ``objects`` is then a
    common table expression over the temporal projection (not materialized: each use pushes its
    filters into the version indexes) and every read of the log stops at ``at``."""
    if at is None:
        head, upto, past = "(SELECT coalesce(max(position), 0) FROM events)", "", ""
    else:
        p = int(at)  # a literal: the planner sees the bound
        head, upto = str(p), f" AND e.position <= {p}"
        past = (
            "objects AS NOT MATERIALIZED (SELECT kind, namespace, name, object, status "
            f"FROM object_versions WHERE valid_from <= {p} AND valid_to > {p}),\n"
        )
    return f"""
WITH {past}o AS (SELECT object, status FROM objects WHERE kind = %(k)s AND namespace = %(n)s AND name = %(m)s),
pods AS ({_PODS[kind]})
SELECT json_build_object(
  'head', {head},
  'object', (SELECT json_build_array(object, status) FROM o),
  'pods', (SELECT coalesce(json_agg(json_build_array(name, object, status) ORDER BY name), '[]') FROM pods),
  'quota', (SELECT json_build_array(name, object) FROM objects
            WHERE kind = 'ElasticQuota' AND namespace = %(n)s LIMIT 1),
  'used', (SELECT used FROM quota_usage WHERE namespace = %(n)s{upto.replace("e.position", "valid_from")}
            ORDER BY valid_from DESC LIMIT 1),
  'decisions', (SELECT coalesce(json_agg({_BRIEF} ORDER BY e.position), '[]') FROM events e
                WHERE {_DECISIONS[kind]}{upto}),
  'pod_events', (SELECT coalesce(json_agg({_BRIEF} ORDER BY e.position), '[]') FROM events e
                 WHERE e.position IN (SELECT k.position FROM event_keys k
                   WHERE k.stream = ANY(ARRAY(SELECT 'sched/pod/' || %(n)s || '/' || name FROM pods))){upto}),
  'preempted', (SELECT coalesce(json_agg({_BRIEF} ORDER BY e.position), '[]') FROM events e
                WHERE e.type = 'PodPreempted' AND e.data->>'preemptor' = ANY({_PREEMPTORS[kind]}){upto}),
  'observed', (SELECT coalesce(json_agg(json_build_array(pod, node, scheduler, cluster, position)), '[]')
               FROM (SELECT DISTINCT ON (data->>'pod') data->>'pod' AS pod, data->>'node' AS node,
                       data->>'scheduler' AS scheduler, data->>'cluster' AS cluster, position
                     FROM events e WHERE type = 'PodBindingObserved'{upto}
                     AND data->>'pod' = ANY(ARRAY(SELECT %(n)s || '/' || name FROM pods))
                     ORDER BY data->>'pod', position DESC) ob)
)::text
"""


_STATEMENTS = {kind: _statement(kind) for kind in _PODS}


def _events(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for e in items:
        e["at"] = datetime.fromisoformat(e["at"])
    return items


def explain_inputs(
    conn: Conn,
    kind: str,
    namespace: str,
    name: str,
    group_types: Sequence[str],
    at: int | None = None,
) -> dict[str, Any] | None:
    """What live explain of ``kind`` ``namespace/name`` reads (``at``: what explain --at reads as of
    that position, the temporal projection for the state), in one round trip; None when the
    object does not exist. Keys: ``head``; ``object`` and ``status``; ``pods`` [(name, manifest,
    status)] by name; ``quota`` (name, manifest) or None; ``used`` {resource: total};
    ``decisions`` (the group's events of ``group_types``; for a composite also its stream), ``pod_events``
    (the pods' scheduler streams) and ``preempted`` (PodPreempted by the object or its group), each
    a list of {position, type, stream, data, meta, at} in position order; ``observed`` the
    cluster's last observed binding per pod on a shadow ledger (``log.observed_bindings``)."""
    stmt = _STATEMENTS[kind] if at is None else _statement(kind, at)
    raw = scalar(conn, stmt, {"k": kind, "n": namespace, "m": name, "t": list(group_types)})
    doc = orjson.loads(raw)
    if doc["object"] is None:
        return None
    obj, status = doc["object"]
    quota = doc["quota"]
    return {
        "head": int(doc["head"]),
        "object": obj,
        "status": status,
        "pods": [(p[0], p[1], p[2]) for p in doc["pods"]],
        "quota": (quota[0], quota[1]) if quota else None,
        "used": usage_totals(doc["used"]) if quota else {},
        "decisions": _events(doc["decisions"]),
        "pod_events": _events(doc["pod_events"]),
        "preempted": _events(doc["preempted"]),
        "observed": {
            o[0]: {"node": o[1], "scheduler": o[2], "cluster": o[3], "position": o[4]}
            for o in doc["observed"]
        },
    }


__all__ = ["explain_inputs"]
