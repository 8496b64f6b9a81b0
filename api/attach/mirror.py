"""One remote change -> the input events podledger already has, in one transaction.

- ADDED/MODIFIED: the object goes through ``api.services.objects.apply_objects`` (validation,
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

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from api.attach.kinds import Watched, key_of, node_name, resource_version, rv_number, to_manifest
from api.services import objects as services
from ledger import writer
from ledger.queries.objects import projection_rows
from ledger.resources.parse import Document, validate
from ledger.store import NewEvent

ATTACH_NS = uuid.UUID("0b9d7e0e-18a7-4c55-9d51-3f6b0f0f1a18")

# outcomes of one change
CREATED, UPDATED, UNCHANGED, DELETED, BOUND = "created", "updated", "unchanged", "deleted", "bound"
DEFERRED, REJECTED, INVALID, ABSENT = "deferred", "rejected", "invalid", "absent"

SchedulerOf = Callable[[str, str], str | None]  # (namespace, pod) -> who bound it, from Events


class _InTransaction:
    """An Engine stand-in whose ``begin()`` yields our connection (a service call joins it)."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    @contextmanager
    def begin(self) -> Iterator[Connection]:
        yield self._conn

    connect = begin


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
        self, engine: Engine, cluster: str, scheduler_of: SchedulerOf | None = None, shadow: bool = False
    ) -> None:
        self.engine = engine
        self.cluster = cluster
        self.scheduler_of = scheduler_of
        self.shadow = shadow
        self.actor = f"attach/{cluster}"

    # -- the resume point -------------------------------------------------------------------
    def cursor(self, w: Watched, scope: str | None) -> str | None:
        """The highest remote resourceVersion recorded for (kind, scope), or None."""
        with self.engine.connect() as conn:
            value = conn.execute(
                sa.text(
                    "SELECT max((meta->'attach'->>'rv')::bigint) FROM events "
                    "WHERE meta ? 'attach' AND meta->'attach'->>'cluster' = :c "
                    "AND meta->'attach'->>'kind' = :k AND meta->'attach'->>'scope' = :s"
                ),
                {"c": self.cluster, "k": w.kind, "s": scope or ""},
            ).scalar_one()
        return None if value is None else str(value)

    def _meta(self, w: Watched, scope: str | None, obj: dict[str, Any], rv: str) -> dict[str, Any]:
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
        return {"via": "attach", "attach": info}

    def _event_key(self, obj: dict[str, Any], rv: str, what: str) -> str:
        uid = (obj.get("metadata") or {}).get("uid") or ""
        return f"attach\x1f{self.cluster}\x1f{uid}\x1f{rv}\x1f{what}"

    # -- one change ---------------------------------------------------------------------------
    def apply(
        self, w: Watched, scope: str | None, typ: str, obj: dict[str, Any], *, defer: bool = True
    ) -> Change:
        """Record one watch event (``typ`` ADDED, MODIFIED or DELETED) in one transaction.

        An object admission refuses (a reference to an object not mirrored yet) is DEFERRED with
        nothing written when ``defer``; without it the refusal is recorded (AdmissionRejected)."""
        rv = resource_version(obj)
        if typ == "DELETED":
            with self.engine.begin() as conn:
                return Change([self._delete(conn, w, scope, obj, rv)], rv)
        manifest = to_manifest(w, obj)
        parsed, errors = validate(Document(1, f"{self.cluster}:{w.plural}", manifest))
        if parsed is None or errors:
            return Change([INVALID], rv, "; ".join(str(e) for e in errors))
        outcomes: list[str] = []
        with self.engine.begin() as conn:
            kind, ns, name = key_of(w, obj)
            local = projection_rows(conn, kind, ns or None, name)
            uid = (obj.get("metadata") or {}).get("uid")
            if local and uid and local[0]["uid"] and local[0]["uid"] != uid:
                # the object was deleted and re-created under the same name while we were away
                outcomes.append(
                    self._delete(
                        conn, w, scope, {"metadata": {"uid": local[0]["uid"]}}, rv, key=(kind, ns, name)
                    )
                )
                local = []
            meta = self._meta(w, scope, obj, rv)
            savepoint = conn.begin_nested()
            result = services.apply_objects(
                _InTransaction(conn),  # type: ignore[arg-type]
                [parsed],
                actor=self.actor,
                source=f"attach:{self.cluster}",
                meta=meta,
                idempotency_key=self._event_key(obj, rv, "apply"),
            )
            if result.rejected:
                if defer:
                    savepoint.rollback()
                    return Change([DEFERRED], rv, "; ".join(result.errors))
                savepoint.commit()
                return Change([REJECTED], rv, "; ".join(result.errors))
            savepoint.commit()
            line = result.lines[0] if result.lines else ""
            action = line.rpartition(" ")[2]
            outcomes.append(action if action in (CREATED, UPDATED) else UNCHANGED)
            if w.kind == "Pod":
                bound = self._observe_binding(conn, w, scope, obj, rv, local[0] if local else None)
                if bound:
                    outcomes.append(bound)
        return Change(outcomes, rv)

    def _delete(
        self,
        conn: Connection,
        w: Watched,
        scope: str | None,
        obj: dict[str, Any],
        rv: str,
        key: tuple[str, str, str] | None = None,
    ) -> str:
        kind, ns, name = key or key_of(w, obj)
        local = projection_rows(conn, kind, ns or None, name)
        uid = (obj.get("metadata") or {}).get("uid")
        if not local or (uid and local[0]["uid"] and local[0]["uid"] != uid):
            return ABSENT  # already gone, or a newer incarnation under the same name
        services.delete_objects(
            _InTransaction(conn),  # type: ignore[arg-type]
            [(kind, ns or None, name)],
            actor=self.actor,
            meta=self._meta(w, scope, obj, rv),
            idempotency_key=self._event_key(obj, rv, "delete"),
        )
        return DELETED

    def _observe_binding(
        self,
        conn: Connection,
        w: Watched,
        scope: str | None,
        obj: dict[str, Any],
        rv: str,
        before: dict[str, Any] | None,
    ) -> str | None:
        node = node_name(obj)
        if not node:
            return None
        _kind, ns, name = key_of(w, obj)
        uid = (obj.get("metadata") or {}).get("uid") or ""
        if self.shadow:
            # the ledger's state is podledger's own placement: the cluster's is recorded beside it
            last = conn.execute(
                sa.text(
                    "SELECT data->>'node', meta->'attach'->>'uid' FROM events WHERE position = "
                    "(SELECT k.position FROM event_keys k WHERE k.stream = :s ORDER BY k.version DESC LIMIT 1)"
                ),
                {"s": f"attach/pod/{ns}/{name}"},
            ).first()
            if last is not None and tuple(last) == (node, uid):
                return None
        else:
            current = projection_rows(conn, "Pod", ns, name)
            if current and (current[0]["status"] or {}).get("nodeName") == node:
                return None
        actor = (
            (self.scheduler_of(ns, name) if self.scheduler_of is not None else None)
            or _bound_by_managed_fields(obj)
            or (obj.get("spec") or {}).get("schedulerName")
            or "default-scheduler"
        )
        group = ((obj.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")
        data = {
            "pod": f"{ns}/{name}",
            "node": node,
            "group": f"{ns}/{group}" if group else None,
            "requests": None,
        }
        meta = {"actor": actor, "observed": True, **self._meta(w, scope, obj, rv)}
        eid = uuid.uuid5(ATTACH_NS, self._event_key(obj, rv, "bound"))
        if self.shadow:
            observed = {"pod": data["pod"], "node": node, "group": data["group"], "scheduler": actor}
            observed["cluster"] = self.cluster
            ev = NewEvent(f"attach/pod/{ns}/{name}", "PodBindingObserved", observed, meta, eid)
        else:
            ev = NewEvent(f"sched/pod/{ns}/{name}", "PodBound", data, meta, eid)
        writer.write(conn, [ev])
        return BOUND

    # -- a whole list -------------------------------------------------------------------------
    def local_keys(self, w: Watched, scope: str | None) -> dict[tuple[str, str, str], str]:
        """(kind, namespace, name) -> uid of the ledger's current objects of ``w`` in ``scope``."""
        with self.engine.connect() as conn:
            rows = projection_rows(conn, w.kind, scope if w.namespaced else None)
        return {(w.kind, r["namespace"], r["name"]): r["uid"] for r in rows}

    def stale(self, w: Watched, scope: str | None, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Objects the ledger holds that a complete list no longer has: DELETED stand-ins."""
        remote = {key_of(w, o) for o in items}
        out = []
        for (kind, ns, name), uid in sorted(self.local_keys(w, scope).items()):
            if (kind, ns, name) not in remote:
                out.append({"metadata": {"name": name, "namespace": ns or None, "uid": uid}})
        return out


def by_resource_version(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A list's items oldest change first: a process killed half-way through leaves a cursor
    below every item it has not recorded yet, so a watch from the cursor brings them back."""
    return sorted(items, key=lambda o: (rv_number(resource_version(o)) or 0, key_of_any(o)))


def key_of_any(obj: dict[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")
