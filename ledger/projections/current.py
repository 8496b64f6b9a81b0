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
from typing import Any

import orjson
from psycopg.types.json import set_json_loads
from sqlalchemy.engine import Connection

from ledger.events import INPUT_KINDS
from ledger.store import StoredEvent, _raw

PREFIX_TO_KIND = {prefix: kind for kind, prefix in INPUT_KINDS.items()}
CLUSTER_SCOPED = {"Node", "PriorityClass", "SchedulerConfig"}

_SELECT = """
SELECT o.kind, o.namespace, o.name, o.uid, o.object, o.status, o.created_position, o.updated_position,
       o.created_at, o.updated_at
FROM objects o
JOIN unnest(%b::text[], %b::text[], %b::text[]) AS q(kind, namespace, name) USING (kind, namespace, name)
"""
_WRITE = """
INSERT INTO objects (kind, namespace, name, uid, object, status, created_position, updated_position, created_at, updated_at)
SELECT k, n, m, u, o::jsonb, s::jsonb, cp, up, ca, ua
FROM unnest(%b::text[], %b::text[], %b::text[], %b::text[], %b::text[], %b::text[], %b::bigint[], %b::bigint[],
            %b::timestamptz[], %b::timestamptz[]) AS x(k, n, m, u, o, s, cp, up, ca, ua)
ON CONFLICT (kind, namespace, name) DO UPDATE SET
  uid = excluded.uid, object = excluded.object, status = excluded.status,
  created_position = excluded.created_position, updated_position = excluded.updated_position,
  created_at = excluded.created_at, updated_at = excluded.updated_at
"""
_DELETE = """
DELETE FROM objects o USING unnest(%b::text[], %b::text[], %b::text[]) AS q(kind, namespace, name)
WHERE o.kind = q.kind AND o.namespace = q.namespace AND o.name = q.name
"""

Key = tuple[str, str, str]


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


def _set_condition(row: dict[str, Any], cond: dict[str, Any], when: str) -> None:
    """metav1 semantics: lastTransitionTime changes only when the status flips."""
    conds = list(row["status"].get("conditions") or [])
    old = next((c for c in conds if c.get("type") == cond["type"]), None)
    ltt = old.get("lastTransitionTime") if old is not None and old.get("status") == cond["status"] else when
    conds = [c for c in conds if c.get("type") != cond["type"]]
    conds.append({**cond, "lastTransitionTime": ltt})
    row["status"] = {**row["status"], "conditions": conds}


def _touch(ev: StoredEvent) -> Iterable[Key]:
    """The objects an event changes (to prefetch them)."""
    typ, data = ev.type, ev.data
    for action in ("Created", "Updated", "Deleted"):
        if typ.endswith(action) and typ[: -len(action)] in PREFIX_TO_KIND:
            kind = PREFIX_TO_KIND[typ[: -len(action)]]
            if action == "Deleted":
                yield (kind, data.get("namespace", ""), data["name"])
            else:
                ns, name, _ = _ident(data["object"], kind)
                yield (kind, ns, name)
            return
    if typ in ("PodBound", "PodNominated", "PodUnschedulable", "PodGated"):
        yield ("Pod", *split_key(data["pod"]))
    elif typ == "PodPreempted":
        yield ("Pod", *split_key(data["victim"]))
    elif typ in ("PodGroupConditionChanged", "CompositePodGroupConditionChanged"):
        kind = "PodGroup" if typ.startswith("PodGroup") else "CompositePodGroup"
        yield (kind, *split_key(data["group"]))


def _apply(rows: dict[Key, dict[str, Any] | None], ev: StoredEvent, dirty: set[Key]) -> None:
    typ, data, pos, ts = ev.type, ev.data, ev.position, ev.effective_at
    when = ts.isoformat()
    for action in ("Created", "Updated", "Deleted"):
        if typ.endswith(action) and typ[: -len(action)] in PREFIX_TO_KIND:
            kind = PREFIX_TO_KIND[typ[: -len(action)]]
            if action == "Deleted":
                key = (kind, data.get("namespace", ""), data["name"])
                rows[key] = None
                dirty.add(key)
                return
            obj = data["object"]
            ns, name, uid = _ident(obj, kind)
            key = (kind, ns, name)
            status: dict[str, Any] = {}
            if kind == "Pod":
                status = _pod_status_from_object(obj)
                if action == "Created" and not status:
                    status = {"phase": "Pending"}
            cur = rows.get(key)
            if cur is not None and cur["uid"] == uid:
                cur.update(
                    object=obj, status={**cur["status"], **status}, updated_position=pos, updated_at=ts
                )
            else:
                rows[key] = {
                    "uid": uid,
                    "object": obj,
                    "status": status,
                    "created_position": pos,
                    "updated_position": pos,
                    "created_at": ts,
                    "updated_at": ts,
                }
            dirty.add(key)
            return
    keys = list(_touch(ev))
    if not keys:
        return
    key = keys[0]
    row = rows.get(key)
    if row is None:  # a decision about an object that is gone: nothing to project
        return
    if typ == "PodBound":
        row["status"] = {
            **row["status"],
            "phase": "Bound",
            "nodeName": data["node"],
            "nominatedNodeName": None,
            "gated": None,
            "boundAt": when,
        }
        _set_condition(row, {"type": "PodScheduled", "status": "True", "reason": "", "message": ""}, when)
    elif typ == "PodNominated":
        row["status"] = {**row["status"], "nominatedNodeName": data["node"]}
    elif typ == "PodUnschedulable":
        row["status"] = {**row["status"], "gated": None}
        _set_condition(
            row,
            {"type": "PodScheduled", "status": "False", "reason": data["reason"], "message": data["message"]},
            when,
        )
    elif typ == "PodGated":
        row["status"] = {**row["status"], "gated": {"plugin": data["plugin"], "message": data["message"]}}
    elif typ == "PodPreempted":
        row["status"] = {
            **row["status"],
            "phase": "Preempted",
            "nodeName": None,
            "preemptedBy": data["preemptor"],
            "preemptedAt": when,
        }
        _set_condition(
            row,
            {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "PreemptionByScheduler",
                "message": data.get("condition_message", ""),
            },
            when,
        )
    else:  # group conditions
        _set_condition(
            row,
            {
                "type": data["type"],
                "status": data["status"],
                "reason": data["reason"],
                "message": data["message"],
            },
            when,
        )
        if data["status"] == "True":
            row["status"] = {**row["status"], "scheduledAt": when}
    row["updated_position"], row["updated_at"] = pos, ts
    dirty.add(key)


def project(conn: Connection, events: Sequence[StoredEvent]) -> None:
    """Fold ``events`` (in position order) into ``objects`` inside the caller's transaction.

    The rows the batch touches are read once, folded in Python, and written back with one
    set-based upsert and one delete: a constant number of round trips per batch.
    """
    keys: set[Key] = set()
    for ev in events:
        keys.update(_touch(ev))
    if not keys:
        return
    ordered = sorted(keys)
    rows: dict[Key, dict[str, Any] | None] = {}
    with _raw(conn).cursor() as cur:
        set_json_loads(orjson.loads, cur)
        # %b placeholders: arrays go in binary form, without text quoting/escaping per element
        cur.execute(_SELECT, ([k[0] for k in ordered], [k[1] for k in ordered], [k[2] for k in ordered]))
        for r in cur.fetchall():
            rows[(r[0], r[1], r[2])] = {
                "uid": r[3],
                "object": r[4],
                "status": r[5],
                "created_position": r[6],
                "updated_position": r[7],
                "created_at": r[8],
                "updated_at": r[9],
            }
        existed = set(rows)
        dirty: set[Key] = set()
        for ev in events:
            _apply(rows, ev, dirty)
        gone = sorted(k for k in dirty if rows.get(k) is None and k in existed)
        live = sorted(k for k in dirty if rows.get(k) is not None)
        if gone:
            cur.execute(_DELETE, ([k[0] for k in gone], [k[1] for k in gone], [k[2] for k in gone]))
        if live:
            vals = [rows[k] for k in live]
            cur.execute(
                _WRITE,
                (
                    [k[0] for k in live],
                    [k[1] for k in live],
                    [k[2] for k in live],
                    [v["uid"] for v in vals],  # type: ignore[index]
                    [orjson.dumps(v["object"]).decode() for v in vals],  # type: ignore[index]
                    [orjson.dumps(v["status"]).decode() for v in vals],  # type: ignore[index]
                    [v["created_position"] for v in vals],  # type: ignore[index]
                    [v["updated_position"] for v in vals],  # type: ignore[index]
                    [v["created_at"] for v in vals],  # type: ignore[index]
                    [v["updated_at"] for v in vals],  # type: ignore[index]
                ),
            )


def touched_keys(ev: StoredEvent) -> list[Key]:
    """The objects (kind, namespace, name) an event changes, by this projection's rule."""
    return list(_touch(ev))


def fold_into(rows: dict[Key, dict[str, Any] | None], ev: StoredEvent) -> None:
    """Fold one event into in-memory rows keyed (kind, namespace, name), as the ``objects``
    projection does in the database (None marks a deleted object)."""
    _apply(rows, ev, set())
