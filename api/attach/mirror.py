"""One remote change -> the input events podledger already has, in one unit of work
(``api/services/commands/mirror.py`` appends them).

- ADDED/MODIFIED: the object goes through ``api.services.commands.objects.apply_objects`` (validation,
  admission, the ``<Kind>Created``/``Updated`` event): an object whose manifest did not change
  appends nothing, which is what makes a re-list idempotent.
- DELETED (or missing from a re-list): ``delete_objects`` (``<Kind>Deleted``).
- A pod whose ``spec.nodeName`` the cluster set: in mirror mode one ``PodBound`` event, as the pods/binding
  subresource of ``podledger serve`` records an outside scheduler's decision (no ``cycle`` in the
  meta: replay treats it as an input), with ``observed: true`` and the actor = the scheduler that
  bound it (its ``Scheduled`` Event, else the managedFields manager that set ``spec.nodeName``,
  else the pod's ``schedulerName``). In shadow mode a ``PodBindingObserved`` instead, which the
  state does not fold: podledger's worker places the pod itself, and the views
  ``v_shadow_pod_differences`` / ``v_shadow_group_differences`` compare the two.

Every event's meta has ``attach``: cluster, kind, the watched scope, the remote uid and
resourceVersion. ``cursor`` is the highest resourceVersion recorded for a (kind, scope): where a
restarted ``attach`` resumes its watch. Event ids derive from (cluster, uid, resourceVersion), so
the same remote change is never appended twice even by two racing processes.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from api.attach.kinds import (
    SCHEDULING_REASONS,
    Watched,
    key_of,
    node_name,
    resource_version,
    rv_number,
    to_manifest,
)
from api.services.commands import mirror as commands
from api.services.commands.mirror import (
    ABSENT,
    BOUND,
    CREATED,
    DEFERRED,
    DELETED,
    INVALID,
    REJECTED,
    UNCHANGED,
    UPDATED,
)
from ledger.canonical import MAX_EVENT_BYTES
from ledger.database import Database
from ledger.errors import EventValidationError
from ledger.queries.log import attach_cursor
from ledger.queries.objects import projection_rows
from ledger.resources.parse import Document, validate

ATTACH_NS = uuid.UUID("0b9d7e0e-18a7-4c55-9d51-3f6b0f0f1a18")

__all__ = [
    "ABSENT",
    "BOUND",
    "CREATED",
    "DEFERRED",
    "DELETED",
    "INVALID",
    "REJECTED",
    "UNCHANGED",
    "UPDATED",
    "Change",
    "Mirror",
]

SchedulerOf = Callable[[str, str], str | None]  # (namespace, pod) -> who bound it, from Events


@dataclass
class Change:
    outcomes: list[str]
    rv: str
    detail: str = ""


def _bound_by_managed_fields(obj: dict[str, Any]) -> str | None:
    for entry in reversed((obj.get("metadata") or {}).get("managedFields") or []):
        fields = entry.get("fieldsV1") or {}
        if entry.get("subresource") == "binding" or "f:nodeName" in (fields.get("f:spec") or {}):
            return str(entry.get("manager") or "") or None
    return None


class Mirror:
    def __init__(
        self,
        db: Database,
        cluster: str,
        scheduler_of: SchedulerOf | None = None,
        shadow: bool = False,
        verdicts: bool = False,
    ) -> None:
        self.db = db
        self.cluster = cluster
        self.scheduler_of = scheduler_of
        self.shadow = shadow
        # mirror mode: the cluster scheduler's verdicts are the state's (shadow: podledger's
        # own are; schedule: podledger's worker decides its pods on this ledger)
        self.verdicts = verdicts
        self.actor = f"attach/{cluster}"
        self._events_seen: set[str] = set()

    # -- the resume point -------------------------------------------------------------------
    def cursor(self, w: Watched, scope: str | None) -> str | None:
        """The highest remote resourceVersion recorded for (kind, scope), or None."""
        with self.db.connect() as conn:
            value = attach_cursor(conn, self.cluster, w.kind, scope or "")
        return None if value is None else str(value)

    def _meta(
        self, w: Watched, scope: str | None, obj: dict[str, Any], rv: str, listed: bool = False
    ) -> dict[str, Any]:
        info: dict[str, Any] = {
            "cluster": self.cluster,
            "kind": w.kind,
            "scope": scope or "",
            "uid": (obj.get("metadata") or {}).get("uid") or "",
            "resourceVersion": rv,
        }
        n = rv_number(rv)
        if n is not None:
            info["rv"] = n
        if listed:
            # the cursor (a resume point) counts only changes read from a watch: a list's pages
            # come in name order, and a process stopped half-way through one must list again
            info["listed"] = True
        return {"via": "attach", "attach": info}

    def _event_key(self, obj: dict[str, Any], rv: str, what: str) -> str:
        uid = (obj.get("metadata") or {}).get("uid") or ""
        return f"attach\x1f{self.cluster}\x1f{uid}\x1f{rv}\x1f{what}"

    # -- one change ---------------------------------------------------------------------------
    def apply(
        self,
        w: Watched,
        scope: str | None,
        typ: str,
        obj: dict[str, Any],
        *,
        defer: bool = True,
        listed: bool = False,
    ) -> Change:
        """Record one watch event (``typ`` ADDED, MODIFIED or DELETED) in one unit of work.

        An object admission refuses (a reference to an object not mirrored yet) is DEFERRED with
        nothing written when ``defer``; without it the refusal is recorded (AdmissionRejected)."""
        rv = resource_version(obj)
        uid = (obj.get("metadata") or {}).get("uid") or None
        meta = self._meta(w, scope, obj, rv, listed)
        if typ == "DELETED":
            with self.db.unit_of_work() as uow:
                outcome = commands.record_deletion(
                    uow,
                    key_of(w, obj),
                    uid,
                    actor=self.actor,
                    meta=meta,
                    idempotency_key=self._event_key(obj, rv, "delete"),
                )
                uow.commit()
            return Change([outcome], rv)
        manifest = to_manifest(w, obj)
        size = len(json.dumps(manifest, separators=(",", ":"), ensure_ascii=False).encode())
        if size > MAX_EVENT_BYTES - 4096:  # the event's other fields need a little room
            reason = f"the object is {size} bytes, over the ledger's {MAX_EVENT_BYTES}-byte event limit"
            return self.invalid(w, scope, obj, reason, size)
        parsed, errors = validate(Document(1, f"{self.cluster}:{w.plural}", manifest))
        if parsed is None or errors:
            return self.invalid(
                w, scope, obj, "; ".join(str(e) for e in errors) or "not a valid object", size
            )
        try:
            return self._record(w, scope, obj, rv, uid, meta, manifest, parsed, defer)
        except EventValidationError as exc:  # nothing of the unit was committed
            return self.invalid(w, scope, obj, str(exc), size)

    def invalid(
        self,
        w: Watched,
        scope: str | None,
        obj: dict[str, Any] | None,
        reason: str,
        size: int | None = None,
        digest: str = "",
    ) -> Change:
        """Record what cannot be recorded (``obj`` None: a watch line with no object) as
        ``RemoteObjectInvalid`` with ``reason``: the mirror skips it and goes on."""
        md = (obj or {}).get("metadata") or {}
        md = md if isinstance(md, dict) else {}
        rv = str(md.get("resourceVersion") or "")[:64]
        data = {
            "cluster": self.cluster,
            "kind": w.kind,
            "namespace": (str(md.get("namespace") or "") or None) if w.namespaced else None,
            "name": str(md.get("name") or "")[:253],
            "uid": str(md.get("uid") or "")[:64],
            "resource_version": rv,
            "reason": reason[:2000],
            "size": size,
        }
        what = data["uid"] or f"{data['namespace']}/{data['name']}"
        key = (
            f"attach\x1f{self.cluster}\x1f{w.kind}\x1f{what}\x1f{rv}\x1finvalid\x1f{reason[:200]}\x1f{digest}"
        )
        meta = {"via": "attach", "attach": {"cluster": self.cluster, "kind": w.kind, "scope": scope or ""}}
        with self.db.unit_of_work() as uow:
            commands.record_invalid(uow, data, meta=meta, event_id=uuid.uuid5(ATTACH_NS, key))
            uow.commit()
        return Change([INVALID], rv, reason)

    def _record(
        self,
        w: Watched,
        scope: str | None,
        obj: dict[str, Any],
        rv: str,
        uid: str | None,
        meta: dict[str, Any],
        manifest: dict[str, Any],
        parsed: Any,
        defer: bool,
    ) -> Change:
        keys = {"apply": self._event_key(obj, rv, "apply"), "delete": self._event_key(obj, rv, "delete")}
        with self.db.unit_of_work() as uow:
            outcomes, before, refused = commands.record_object(
                uow,
                key_of(w, obj),
                uid,
                parsed,
                actor=self.actor,
                source=f"attach:{self.cluster}",
                meta=meta,
                keys=keys,
                defer=defer,
                created_at=timestamp((obj.get("metadata") or {}).get("creationTimestamp")),
            )
            if refused:
                uow.commit()
                return Change(outcomes, rv, refused)
            node = node_name(obj)
            if w.kind == "Pod" and node:
                _kind, ns, name = key_of(w, obj)
                scheduler = (
                    (self.scheduler_of(ns, name) if self.scheduler_of is not None else None)
                    or _bound_by_managed_fields(obj)
                    or (obj.get("spec") or {}).get("schedulerName")
                    or "default-scheduler"
                )
                bound = commands.record_binding(
                    uow,
                    manifest,
                    node,
                    uid or "",
                    cluster=self.cluster,
                    scheduler=scheduler,
                    shadow=self.shadow,
                    meta=meta,
                    event_id=uuid.uuid5(ATTACH_NS, self._event_key(obj, rv, "bound")),
                )
                if bound:
                    outcomes.append(bound)
            if self.verdicts:
                # not under meta "attach": a verdict is no resume point, and one change of the
                # object may carry several (one per condition)
                seen = {"via": "attach", "observedIn": meta["attach"]}
                outcomes += self._verdict(uow, w, obj, seen)
            uow.commit()
        return Change(outcomes, rv)

    def _verdict(self, uow: Any, w: Watched, obj: dict[str, Any], meta: dict[str, Any]) -> list[str]:
        """Mirror mode: the cluster scheduler's own verdict in the object's status (a pending
        pod's PodScheduled condition and nominatedNodeName, a group's conditions), recorded as
        observed inputs the state folds, at the cluster's times."""
        status = obj.get("status")
        if not isinstance(status, dict) or w.kind not in ("Pod", "PodGroup", "CompositePodGroup"):
            return []
        _kind, ns, name = key_of(w, obj)
        uid = (obj.get("metadata") or {}).get("uid") or f"{ns}/{name}"

        def event_id(what: str) -> uuid.UUID:
            return uuid.uuid5(ATTACH_NS, f"attach\x1f{self.cluster}\x1f{uid}\x1fverdict\x1f{what}")

        scheduler = (
            _status_manager(obj)
            or str((obj.get("spec") or {}).get("schedulerName") or "")
            or "default-scheduler"
        )
        if w.kind == "Pod":
            return commands.record_pod_verdict(
                uow, ns, name, status, scheduler=scheduler, meta=meta, event_id=event_id, when=timestamp
            )
        return commands.record_group_verdict(
            uow, w.kind, ns, name, status, scheduler=scheduler, meta=meta, event_id=event_id, when=timestamp
        )

    # -- the cluster's Events ------------------------------------------------------------------
    def record_events(self, items: list[dict[str, Any]]) -> list[str]:
        """Record the scheduling Events (SCHEDULING_REASONS) of a page of Events (either API
        version), once per (Event, count): its count/series is what says it happened again."""
        out: list[str] = []
        for e in items:
            data = cluster_event(self.cluster, e)
            if data is None:
                continue
            md = e.get("metadata") if isinstance(e.get("metadata"), dict) else {}
            key = f"{data['event']}\x1f{(md or {}).get('uid') or ''}\x1f{data['count']}"
            if key in self._events_seen:
                continue
            eid = uuid.uuid5(ATTACH_NS, f"attach\x1f{self.cluster}\x1fevent\x1f{key}")
            meta = {"via": "attach", "actor": data["reporting_controller"] or "cluster", "observed": True}
            with self.db.unit_of_work() as uow:
                out.append(
                    commands.record_cluster_event(
                        uow, data, meta=meta, event_id=eid, effective_at=timestamp(data["last_time"])
                    )
                )
                uow.commit()
            if len(self._events_seen) > 100_000:  # bounded: the log's event ids still dedupe
                self._events_seen.clear()
            self._events_seen.add(key)
        return out

    # -- a whole list -------------------------------------------------------------------------
    def local_keys(self, w: Watched, scope: str | None) -> dict[tuple[str, str, str], str]:
        """(kind, namespace, name) -> uid of the ledger's current objects of ``w`` in ``scope``."""
        with self.db.connect() as conn:
            rows = projection_rows(conn, w.kind, scope if w.namespaced else None)
        return {(w.kind, r["namespace"], r["name"]): r["uid"] for r in rows}

    def stale(self, w: Watched, scope: str | None, remote: set[tuple[str, str, str]]) -> list[dict[str, Any]]:
        """Objects the ledger holds that a complete list (``remote``: its keys) no longer has:
        DELETED stand-ins."""
        out = []
        for (kind, ns, name), uid in sorted(self.local_keys(w, scope).items()):
            if (kind, ns, name) not in remote:
                out.append({"metadata": {"name": name, "namespace": ns or None, "uid": uid}})
        return out


def cluster_event(cluster: str, e: dict[str, Any]) -> dict[str, Any] | None:
    """A ClusterEventObserved payload of an Event of either API version (events.k8s.io/v1:
    regarding, note, series, eventTime, deprecated*; core/v1: involvedObject, message, count,
    firstTimestamp/lastTimestamp), or None when it is not a scheduling Event."""
    if not isinstance(e, dict) or e.get("reason") not in SCHEDULING_REASONS:
        return None
    md: dict[str, Any] = e["metadata"] if isinstance(e.get("metadata"), dict) else {}
    about = e.get("regarding") or e.get("involvedObject") or {}
    if not isinstance(about, dict) or not about.get("name"):
        return None
    series: dict[str, Any] = e["series"] if isinstance(e.get("series"), dict) else {}
    count = series.get("count") or e.get("deprecatedCount") or e.get("count") or 1
    first = (
        e.get("deprecatedFirstTimestamp")
        or e.get("firstTimestamp")
        or e.get("eventTime")
        or md.get("creationTimestamp")
    )
    last = (
        series.get("lastObservedTime") or e.get("deprecatedLastTimestamp") or e.get("lastTimestamp") or first
    )
    source: dict[str, Any] = e["source"] if isinstance(e.get("source"), dict) else {}
    ns = str(about.get("namespace") or "")
    return {
        "cluster": cluster,
        "kind": str(about.get("kind") or "Pod"),
        "object": f"{ns}/{about['name']}" if ns else str(about["name"]),
        "uid": str(about.get("uid") or ""),
        "event": f"{md.get('namespace') or ''}/{md.get('name') or ''}",
        "type": str(e.get("type") or ""),
        "reason": str(e["reason"]),
        "message": str(e.get("note") or e.get("message") or "")[:4096],
        "count": int(count) if isinstance(count, int) else 1,
        "first_time": str(first or ""),
        "last_time": str(last or ""),
        "reporting_controller": str(
            e.get("reportingController") or e.get("reportingComponent") or source.get("component") or ""
        ),
        "reporting_instance": str(e.get("reportingInstance") or source.get("host") or ""),
    }


def timestamp(value: Any) -> datetime | None:
    """An RFC 3339 time of the API (``2026-12-06T07:00:00Z``, fractions allowed), else None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        t = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def _status_manager(obj: dict[str, Any]) -> str | None:
    """The field manager that last wrote the object's status subresource (the scheduler that
    wrote its conditions), if the server keeps managedFields."""
    for entry in reversed((obj.get("metadata") or {}).get("managedFields") or []):
        if isinstance(entry, dict) and entry.get("subresource") == "status" and entry.get("manager"):
            return str(entry["manager"])
    return None


def by_resource_version(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A list's items oldest change first: a process killed half-way through leaves a cursor
    below every item it has not recorded yet, so a watch from the cursor brings them back."""
    return sorted(items, key=lambda o: (rv_number(resource_version(o)) or 0, key_of_any(o)))


def key_of_any(obj: dict[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")
