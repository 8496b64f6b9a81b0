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

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import orjson

from ledger.events import INPUT_ROUTES
from ledger.projections.analytics import Analytics, Before
from ledger.resources.models import pod_effective_requests
from ledger.simple_query import json_arg, run
from ledger.sql import Conn
from ledger.store import StoredEvent

CLUSTER_SCOPED = {"Node", "PriorityClass", "SchedulerConfig"}

_SELECT = """
SELECT o.kind, o.namespace, o.name, o.uid, o.object::text, o.status::text, o.created_position, o.updated_position,
       o.created_at, o.updated_at
FROM objects o
JOIN unnest(%b::text[], %b::text[], %b::text[]) AS q(kind, namespace, name) USING (kind, namespace, name)
"""
_WRITE = """
INSERT INTO objects (kind, namespace, name, uid, object, status, created_position, updated_position, created_at, updated_at)
SELECT k, n, m, u, o, s, cp, up, ca, ua
FROM json_to_recordset(%s::json) AS x(k text, n text, m text, u text, o jsonb, s jsonb, cp bigint, up bigint,
                                      ca timestamptz, ua timestamptz)
ON CONFLICT (kind, namespace, name) DO UPDATE SET
  uid = excluded.uid, object = excluded.object, status = excluded.status,
  created_position = excluded.created_position, updated_position = excluded.updated_position,
  created_at = excluded.created_at, updated_at = excluded.updated_at
"""
_STATUS_WRITE = """
UPDATE objects o SET status = x.s, updated_position = x.up, updated_at = x.ua
FROM json_to_recordset(%s::json) AS x(k text, n text, m text, s jsonb, up bigint, ua timestamptz)
WHERE o.kind = x.k AND o.namespace = x.n AND o.name = x.m
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
    conds: list[dict[str, Any]] = []  # the others, in order
    old = None  # the first of cond's type
    for c in row["status"].get("conditions") or ():
        if c.get("type") != cond["type"]:
            conds.append(c)
        elif old is None:
            old = c
    ltt = old.get("lastTransitionTime") if old is not None and old.get("status") == cond["status"] else when
    conds.append({**cond, "lastTransitionTime": ltt})
    row["status"] = {**row["status"], "conditions": conds}


def _gated(row: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    """PodScheduled of a pod that PreEnqueue rejected, in the scheduler's words (the PodGated
    payload's ``reason`` and ``condition_message``). A v1 payload from before the scheduler worded
    it has no reason for a SchedulingGates rejection: the pod keeps the reason the kube-apiserver
    gives a pod created with scheduling gates when it has gates of its own."""
    reason = data.get("reason")
    if reason is None:
        own = ((row.get("object") or {}).get("spec") or {}).get("schedulingGates")
        reason = "SchedulingGated" if own else "NotReadyForScheduling"
    message = data.get("condition_message")
    return {
        "type": "PodScheduled",
        "status": "False",
        "reason": reason,
        "message": data["message"] if message is None else message,
    }


def _key(ev: StoredEvent) -> Key | None:
    """The object an event changes, if any (an event changes at most one)."""
    typ, data = ev.type, ev.data
    route = INPUT_ROUTES.get(typ)
    if route is not None:
        kind, action = route
        if action == "Deleted":
            return (kind, data.get("namespace", ""), data["name"])
        ns, name, _ = _ident(data["object"], kind)
        return (kind, ns, name)
    if typ in ("PodBound", "PodNominated", "PodUnschedulable", "PodGated"):
        return ("Pod", *split_key(data["pod"]))
    if typ == "PodPreempted":
        return ("Pod", *split_key(data["victim"]))
    if typ in ("PodGroupConditionChanged", "CompositePodGroupConditionChanged"):
        kind = "PodGroup" if typ.startswith("PodGroup") else "CompositePodGroup"
        return (kind, *split_key(data["group"]))
    if typ == "PodGroupSatisfiedChanged":
        return ("PodGroup", *split_key(data["group"]))
    return None


def _apply(
    rows: dict[Key, dict[str, Any] | None],
    ev: StoredEvent,
    dirty: set[Key],
    iso: Callable[[datetime], str] = datetime.isoformat,
) -> None:
    """Fold ``ev`` into ``rows``; ``iso`` prints the times a decision records (the batch's
    ``IsoTimes``: its events share a few time objects)."""
    typ, data, pos, ts = ev.type, ev.data, ev.position, ev.effective_at
    route = INPUT_ROUTES.get(typ)
    if route is not None:
        kind, action = route
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
            cur.update(object=obj, status={**cur["status"], **status}, updated_position=pos, updated_at=ts)
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
    target = _key(ev)
    if target is None:
        return
    row = rows.get(target)
    if row is None:  # a decision about an object that is gone: nothing to project
        return
    when = iso(ts)
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
        if data.get("report", True):
            _set_condition(row, _gated(row, data), when)
    elif typ == "PodGroupSatisfiedChanged":
        cond = {k: data[k] for k in ("status", "reason", "message")}
        _set_condition(row, {"type": "PodGroupSatisfied", **cond}, when)
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
    dirty.add(target)


_VERSION_CLOSE = """
UPDATE object_versions v SET valid_to = q.p
FROM json_to_recordset(%s::json) AS q(k text, n text, m text, p bigint)
WHERE v.kind = q.k AND v.namespace = q.n AND v.name = q.m AND v.valid_to = 9223372036854775807
"""
_VERSION_WRITE = """
INSERT INTO object_versions (kind, namespace, name, valid_from, valid_to, uid, object, status, created_position,
                             created_at, updated_at)
SELECT x.k, x.n, x.m, x.vf, x.vt, x.u,
       COALESCE(x.o, (SELECT c.object FROM objects c WHERE c.kind = x.k AND c.namespace = x.n AND c.name = x.m)),
       x.s, x.cp, x.ca, x.ua
FROM json_to_recordset(%s::json) AS x(k text, n text, m text, vf bigint, vt bigint, u text, o jsonb, s jsonb,
                                      cp bigint, ca timestamptz, ua timestamptz)
"""
# _WRITE, _VERSION_WRITE, _VERSION_CLOSE and _USAGE_WRITE take their rows as one JSON document
# (one orjson call), not as arrays: psycopg builds array parameters element by element in
# Python, which was the largest client cost of a projection write. The document is ``json``,
# not ``jsonb``: the server only scans it once to split it into rows (parsing the whole of it
# into jsonb first cost it more than the rows' own jsonb values).
# A row whose manifest is the one read at the start of the batch (an event that changes only a
# pod's status keeps the object dict) leaves out ``o``: _VERSION_WRITE takes it from the
# ``objects`` row, which still holds it (the pipeline writes versions before objects), and the
# row itself is written by _STATUS_WRITE (an UPDATE of what changed, no upsert). Re-sending the
# unchanged manifests was most of the document the server parsed for a flush of decisions.
# The latest quota usage of each namespace is read by ledger_projection_read (migration 0022):
# one backward step of the primary key per namespace (a DISTINCT ON over the namespace's whole
# history sorts every row it ever had).
_USAGE_WRITE = """
INSERT INTO quota_usage (namespace, valid_from, used)
SELECT n, p, u FROM json_to_recordset(%s::json) AS x(n text, p bigint, u jsonb)
"""
OPEN = 9223372036854775807  # valid_to of the current version of an object

Usage = dict[str, list[int]]  # resource -> [total, number of bound pods requesting it]


def _bound_requests(row: dict[str, Any] | None) -> dict[str, int]:
    """What a pod row adds to its namespace's quota usage: its requests while Bound."""
    if row is None or (row["status"] or {}).get("phase") != "Bound":
        return {}
    return pod_effective_requests({"spec": row["object"].get("spec") or {}})


def _add_usage(usage: Usage, requests: dict[str, int], sign: int) -> None:
    for res, v in requests.items():
        slot = usage.setdefault(res, [0, 0])
        slot[0] += sign * v
        slot[1] += sign
        if slot[1] == 0:
            del usage[res]


def usage_totals(used: Any) -> dict[str, int]:
    """The ``used`` column of quota_usage as {resource: total} (the order resources appeared in)."""
    return {res: int(total) for res, total, _n in used or []}


class _Temporal:
    """Versions and usage changes recorded event by event while a batch is folded."""

    def __init__(self, usage: dict[str, Usage], analytics: bool = True) -> None:
        self.usage = usage
        self.versions: list[tuple[Key, int, dict[str, Any] | None]] = []
        # _USAGE_WRITE's rows, each encoded when recorded (a usage snapshot kept as lists was
        # several containers per bound pod for the garbage collector to walk until the write)
        self.usage_rows: list[bytes] = []
        # a pod object's effective requests, by object identity (a status change keeps the
        # object dict, so a pod's requests are computed once per batch, not per event)
        self._reqs: dict[int, tuple[dict[str, Any], dict[str, int]]] = {}
        # the hourly buckets (migration 0025), same transaction; off only for a re-fold by a
        # migration older than the tables
        self.analytics = Analytics(enabled=analytics)

    def _requests(self, row: dict[str, Any] | None) -> dict[str, int]:
        if row is None or (row["status"] or {}).get("phase") != "Bound":
            return {}
        obj = row["object"]
        hit = self._reqs.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        req = _bound_requests(row)
        self._reqs[id(obj)] = (obj, req)
        return req

    def step(self, rows: dict[Key, dict[str, Any] | None], ev: StoredEvent, dirty: set[Key]) -> None:
        self.analytics.event(ev, rows)
        key = _key(ev)
        if key is None:
            return
        pod = key[0] == "Pod"
        prev = rows.get(key)
        prev_req = self._requests(prev) if pod else None
        before = Before(key[0], prev, prev_req)
        prev_obj, prev_status = (prev["object"], prev["status"]) if prev is not None else (None, None)
        _apply(rows, ev, dirty, self.analytics.iso)
        row = rows.get(key)
        req = self._requests(row) if pod else None
        self.analytics.change(key, before, row, req, ev)
        if row is None:
            if prev is None:
                return
            self.versions.append((key, ev.position, None))
        elif row["updated_position"] == ev.position:
            self.versions.append((key, ev.position, dict(row)))
        else:
            return
        if prev_req is None:
            return
        if (
            row is not None
            and row["object"] is prev_obj
            and row["status"].get("phase") == (prev_status or {}).get("phase")
        ):
            return  # same spec, same phase: same contribution
        if req == prev_req:
            return
        usage = self.usage.setdefault(key[1], {})
        _add_usage(usage, prev_req, -1)
        _add_usage(usage, req or {}, 1)
        self.usage_rows.append(
            orjson.dumps({"n": key[1], "p": ev.position, "u": [[r, t, n] for r, (t, n) in usage.items()]})
        )

    def write(self, cur: Any, existed: set[Key], read: dict[Key, Any]) -> None:
        """Write the recorded versions and usage; ``read`` holds the manifests of the rows read
        at the start of the batch (sent as absent when a version still has the same one)."""
        if self.versions:
            first: dict[Key, int] = {}
            for key, pos, _row in self.versions:
                first.setdefault(key, pos)
            close = sorted(k for k in first if k in existed)
            if close:
                # Never a server-side prepared statement: PostgreSQL's generic plan for this
                # join on its rows scans object_versions (100-250 ms at 10^4 versions, against
                # ~1 ms for the per-call plan that walks the primary key per closed version).
                doc = [{"k": k[0], "n": k[1], "m": k[2], "p": first[k]} for k in close]
                cur.execute(_VERSION_CLOSE, (orjson.dumps(doc).decode(),), prepare=False)
            ends: dict[Key, int] = {}
            out: list[tuple[Key, int, int, dict[str, Any]]] = []
            for key, pos, row in reversed(self.versions):
                if row is not None:
                    out.append((key, pos, ends.get(key, OPEN), row))
                ends[key] = pos
            if out:
                doc = []
                for key, vf, vt, row in out:
                    item = {
                        "k": key[0],
                        "n": key[1],
                        "m": key[2],
                        "vf": vf,
                        "vt": vt,
                        "u": row["uid"],
                        "s": row["status"],
                        "cp": row["created_position"],
                        "ca": row["created_at"],
                        "ua": row["updated_at"],
                    }
                    if row["object"] is not read.get(key):
                        item["o"] = row["object"]
                    doc.append(item)
                cur.execute(_VERSION_WRITE, (orjson.dumps(doc).decode(),))
        self.analytics.write(cur)
        if self.usage_rows:
            cur.execute(_USAGE_WRITE, ((b"[" + b",".join(self.usage_rows) + b"]").decode(),))


_PROJECTION_READ = b"SELECT r_rows, r_usage FROM ledger_projection_read(%b, %b)"


def _read(
    raw: Any, ordered: list[Key], namespaces: list[str]
) -> tuple[dict[Key, dict[str, Any] | None], list[tuple[str, Any]]]:
    """The touched objects' rows and the namespaces' latest quota usage: one simple-query message
    calling ``ledger_projection_read`` (migration 0022: planned once per session, pinned to
    primary-key probes; both results come back as JSON). Times stay ISO 8601 strings: they are
    only written back."""
    res = run(raw, _PROJECTION_READ % (json_arg(ordered), json_arg(namespaces)))[-1]
    found, usage = res.get_value(0, 0), res.get_value(0, 1)
    rows: dict[Key, dict[str, Any] | None] = {
        (r[0], r[1], r[2]): _row(r, r[4], r[5]) for r in (orjson.loads(found) if found else ())
    }
    return rows, [(ns, used) for ns, used in orjson.loads(usage)] if usage else []


def _row(r: Sequence[Any], obj: Any, status: Any) -> dict[str, Any]:
    """A current row as the projection keeps it, from a read's columns (``_SELECT``'s order)
    with the manifest and status decoded."""
    return {
        "uid": r[3],
        "object": obj,
        "status": status,
        "created_position": r[6],
        "updated_position": r[7],
        "created_at": r[8],
        "updated_at": r[9],
    }


def _read_scratch(raw: Any, ordered: list[Key]) -> dict[Key, dict[str, Any] | None]:
    """The touched rows of whatever ``objects`` the search path names (the scratch fold into a
    temporary table, ``temporal.fold_objects_at``, shadows the real one): a plain statement."""
    loads = orjson.loads
    rows: dict[Key, dict[str, Any] | None] = {}
    with raw.cursor() as cur:
        cur.execute(_SELECT, ([k[0] for k in ordered], [k[1] for k in ordered], [k[2] for k in ordered]))
        for r in cur.fetchall():
            rows[(r[0], r[1], r[2])] = _row(r, loads(r[4]), loads(r[5]))
    return rows


def project(
    conn: Conn,
    events: Sequence[StoredEvent],
    *,
    temporal: bool = True,
    commit: bool = False,
    analytics: bool = True,
) -> None:
    """Fold ``events`` (in position order) into ``objects`` inside the caller's transaction.

    The rows the batch touches are read once, folded in Python, and written back with one
    set-based upsert and one delete: a constant number of round trips per batch.

    With ``temporal`` (always, except for a fold into a scratch table) the same fold records
    every version it produces in ``object_versions`` (closing the previous one) and every change
    of a namespace's bound-pod requests in ``quota_usage``, event by event, so the state at any
    position can be read back without folding (ledger/projections/temporal.py).

    ``commit`` (the caller's transaction ends here, ``ledger.writer``): COMMIT is the last
    statement of the write pipeline, whose sync raises any error of it.
    """
    keys: set[Key] = set()
    for ev in events:
        key = _key(ev)
        if key is not None:
            keys.add(key)
    if not keys:
        # nothing to fold (retries, cycle markers): only the analytics' counts, if any
        counts = Analytics(enabled=temporal and analytics)
        for ev in events:
            counts.event(ev, {})
        if counts.attempts or counts.buckets:
            with conn.cursor() as cur, conn.pipeline():
                counts.write(cur)
                if commit:
                    cur.execute("COMMIT")
        elif commit:
            conn.commit()
        return
    ordered = sorted(keys)
    rows: dict[Key, dict[str, Any] | None] = {}
    raw = conn
    namespaces = sorted({k[1] for k in ordered if k[0] == "Pod"}) if temporal else []
    if temporal:
        rows, used_rows = _read(raw, ordered, namespaces)
    else:
        rows, used_rows = _read_scratch(raw, ordered), []
    with raw.cursor() as cur:
        existed = set(rows)
        read = {k: v["object"] for k, v in rows.items() if v is not None}
        dirty: set[Key] = set()
        tracker: _Temporal | None = None
        if temporal:
            usage: dict[str, Usage] = {}
            for ns, used in used_rows:
                usage[ns] = {res: [int(t), int(n)] for res, t, n in used}
            tracker = _Temporal(usage, analytics)
            for ev in events:
                tracker.step(rows, ev, dirty)
        else:
            for ev in events:
                _apply(rows, ev, dirty)
        gone = sorted(k for k in dirty if rows.get(k) is None and k in existed)
        live = sorted(k for k in dirty if rows.get(k) is not None)
        with raw.pipeline():
            if tracker is not None:
                tracker.write(cur, existed, read)
            if gone:
                cur.execute(_DELETE, ([k[0] for k in gone], [k[1] for k in gone], [k[2] for k in gone]))
            if live:
                _write_rows(cur, rows, live, read)
            if commit:
                cur.execute("COMMIT")


def _write_rows(
    cur: Any, rows: dict[Key, dict[str, Any] | None], live: list[Key], read: dict[Key, Any]
) -> None:
    """Write the ``live`` rows: those that keep the manifest read at the start of the batch (and
    so their uid and creation) by an UPDATE of their status, the others by _WRITE's upsert."""
    status: list[dict[str, Any]] = []
    whole: list[dict[str, Any]] = []
    for k in live:
        v = rows[k]
        assert v is not None
        item = {
            "k": k[0],
            "n": k[1],
            "m": k[2],
            "s": v["status"],
            "up": v["updated_position"],
            "ua": v["updated_at"],
        }
        if v["object"] is read.get(k):
            status.append(item)
        else:
            item.update(u=v["uid"], o=v["object"], cp=v["created_position"], ca=v["created_at"])
            whole.append(item)
    if status:
        # per-call plan, as _VERSION_CLOSE's: a generic plan of this join may scan the table
        cur.execute(_STATUS_WRITE, (orjson.dumps(status).decode(),), prepare=False)
    if whole:
        cur.execute(_WRITE, (orjson.dumps(whole).decode(),))


def touched_keys(ev: StoredEvent) -> list[Key]:
    """The objects (kind, namespace, name) an event changes, by this projection's rule."""
    key = _key(ev)
    return [] if key is None else [key]


def fold_into(rows: dict[Key, dict[str, Any] | None], ev: StoredEvent) -> None:
    """Fold one event into in-memory rows keyed (kind, namespace, name), as the ``objects``
    projection does in the database (None marks a deleted object)."""
    _apply(rows, ev, set())
