"""Inline current-state projection: the ``objects`` table (one row per live object).

Updated in the same transaction as the append that produced the events, so readers never see
an event without its state or state without its event. The same fold rebuilds the table from
position 0 (``podledger projections rebuild``).

Status kept per kind (``objects.status``):
- Pod: ``phase`` (Pending | Bound | Preempted), ``nodeName``, ``nominatedNodeName``,
  ``conditions`` (PodScheduled, DisruptionTarget), ``gated`` ({plugin, message}).
- PodGroup / CompositePodGroup: ``conditions`` (PodGroupInitiallyScheduled /
  CompositePodGroupInitiallyScheduled), ``scheduledAt``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy.engine import Connection

from ledger.events import INPUT_KINDS
from ledger.store import StoredEvent, _raw

PREFIX_TO_KIND = {prefix: kind for kind, prefix in INPUT_KINDS.items()}
CLUSTER_SCOPED = {"Node", "PriorityClass", "SchedulerConfig"}

_UPSERT = """
INSERT INTO objects (kind, namespace, name, uid, object, status, created_position, updated_position, created_at, updated_at)
VALUES (%(kind)s, %(ns)s, %(name)s, %(uid)s, %(object)s::jsonb, %(status)s::jsonb, %(pos)s, %(pos)s, %(ts)s, %(ts)s)
ON CONFLICT (kind, namespace, name) DO UPDATE SET
  uid = excluded.uid,
  object = excluded.object,
  status = CASE WHEN objects.uid = excluded.uid THEN objects.status || excluded.status ELSE excluded.status END,
  updated_position = excluded.updated_position,
  updated_at = excluded.updated_at
"""
_DELETE = "DELETE FROM objects WHERE kind = %(kind)s AND namespace = %(ns)s AND name = %(name)s"
_PATCH = """
UPDATE objects SET status = status || %(patch)s::jsonb, updated_position = %(pos)s, updated_at = %(ts)s
WHERE kind = %(kind)s AND namespace = %(ns)s AND name = %(name)s
"""
_CONDITION = """
UPDATE objects SET status = jsonb_set(
    status, '{conditions}',
    coalesce((SELECT jsonb_agg(c) FROM jsonb_array_elements(coalesce(status->'conditions', '[]'::jsonb)) c
              WHERE c->>'type' <> %(type)s), '[]'::jsonb)
    || jsonb_build_array(%(cond)s::jsonb || jsonb_build_object('lastTransitionTime', coalesce(
        (SELECT c->>'lastTransitionTime' FROM jsonb_array_elements(coalesce(status->'conditions', '[]'::jsonb)) c
         WHERE c->>'type' = %(type)s AND c->>'status' = %(cond)s::jsonb->>'status' LIMIT 1),
        %(tsiso)s)))),
  updated_position = %(pos)s, updated_at = %(ts)s
WHERE kind = %(kind)s AND namespace = %(ns)s AND name = %(name)s
"""


def split_key(key: str) -> tuple[str, str]:
    ns, _, name = key.partition("/")
    return (ns, name) if name else ("", ns)


def _ident(obj: dict[str, Any], kind: str) -> tuple[str, str, str]:
    meta = obj.get("metadata", {})
    ns = "" if kind in CLUSTER_SCOPED else str(meta.get("namespace") or "default")
    return ns, str(meta["name"]), str(meta.get("uid") or "")


def _pod_status_from_object(obj: dict[str, Any]) -> dict[str, Any]:
    node = (obj.get("spec") or {}).get("nodeName")
    if node:
        return {"phase": "Bound", "nodeName": node}
    return {}


def _ops(ev: StoredEvent) -> Iterable[tuple[str, dict[str, Any]]]:
    pos, ts = ev.position, ev.effective_at
    base = {"pos": pos, "ts": ts}
    typ, data = ev.type, ev.data
    for action in ("Created", "Updated", "Deleted"):
        if typ.endswith(action) and typ[: -len(action)] in PREFIX_TO_KIND:
            kind = PREFIX_TO_KIND[typ[: -len(action)]]
            if action == "Deleted":
                yield _DELETE, {"kind": kind, "ns": data.get("namespace", ""), "name": data["name"]}
                return
            obj = data["object"]
            ns, name, uid = _ident(obj, kind)
            status: dict[str, Any] = {}
            if kind == "Pod":
                status = _pod_status_from_object(obj)
                if action == "Created" and not status:
                    status = {"phase": "Pending"}
            yield (
                _UPSERT,
                {
                    **base,
                    "kind": kind,
                    "ns": ns,
                    "name": name,
                    "uid": uid,
                    "object": orjson.dumps(obj).decode(),
                    "status": orjson.dumps(status).decode(),
                },
            )
            return
    if typ == "PodBound":
        ns, name = split_key(data["pod"])
        patch = {
            "phase": "Bound",
            "nodeName": data["node"],
            "nominatedNodeName": None,
            "gated": None,
            "boundAt": ts.isoformat(),
        }
        yield _PATCH, {**base, "kind": "Pod", "ns": ns, "name": name, "patch": orjson.dumps(patch).decode()}
        cond = {"type": "PodScheduled", "status": "True", "reason": "", "message": ""}
        yield _condition("Pod", ns, name, cond, base)
    elif typ == "PodNominated":
        ns, name = split_key(data["pod"])
        yield (
            _PATCH,
            {
                **base,
                "kind": "Pod",
                "ns": ns,
                "name": name,
                "patch": orjson.dumps({"nominatedNodeName": data["node"]}).decode(),
            },
        )
    elif typ == "PodUnschedulable":
        ns, name = split_key(data["pod"])
        cond = {
            "type": "PodScheduled",
            "status": "False",
            "reason": data["reason"],
            "message": data["message"],
        }
        yield _PATCH, {**base, "kind": "Pod", "ns": ns, "name": name, "patch": '{"gated": null}'}
        yield _condition("Pod", ns, name, cond, base)
    elif typ == "PodGated":
        ns, name = split_key(data["pod"])
        patch = {"gated": {"plugin": data["plugin"], "message": data["message"]}}
        yield _PATCH, {**base, "kind": "Pod", "ns": ns, "name": name, "patch": orjson.dumps(patch).decode()}
    elif typ == "PodPreempted":
        ns, name = split_key(data["victim"])
        patch = {
            "phase": "Preempted",
            "nodeName": None,
            "preemptedBy": data["preemptor"],
            "preemptedAt": ts.isoformat(),
        }
        yield _PATCH, {**base, "kind": "Pod", "ns": ns, "name": name, "patch": orjson.dumps(patch).decode()}
        cond = {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "PreemptionByScheduler",
            "message": data.get("condition_message", ""),
        }
        yield _condition("Pod", ns, name, cond, base)
    elif typ in ("PodGroupConditionChanged", "CompositePodGroupConditionChanged"):
        kind = "PodGroup" if typ.startswith("PodGroup") else "CompositePodGroup"
        ns, name = split_key(data["group"])
        cond = {
            "type": data["type"],
            "status": data["status"],
            "reason": data["reason"],
            "message": data["message"],
        }
        yield _condition(kind, ns, name, cond, base)
        if data["status"] == "True":
            yield (
                _PATCH,
                {
                    **base,
                    "kind": kind,
                    "ns": ns,
                    "name": name,
                    "patch": orjson.dumps({"scheduledAt": ts.isoformat()}).decode(),
                },
            )


def _condition(
    kind: str, ns: str, name: str, cond: dict[str, Any], base: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    ts: datetime = base["ts"]
    return _CONDITION, {
        **base,
        "kind": kind,
        "ns": ns,
        "name": name,
        "type": cond["type"],
        "cond": orjson.dumps(cond).decode(),
        "tsiso": ts.isoformat(),
    }


def project(conn: Connection, events: Sequence[StoredEvent]) -> None:
    """Fold ``events`` (in position order) into ``objects`` inside the caller's transaction."""
    batch: list[tuple[str, dict[str, Any]]] = []
    for ev in events:
        batch.extend(_ops(ev))
    if not batch:
        return
    with _raw(conn).cursor() as cur:
        # Consecutive statements of the same shape go as one executemany (pipelined).
        i = 0
        while i < len(batch):
            sql = batch[i][0]
            j = i
            while j < len(batch) and batch[j][0] is sql:
                j += 1
            if j - i == 1:
                cur.execute(sql, batch[i][1])
            else:
                cur.executemany(sql, [p for _, p in batch[i:j]])
            i = j
