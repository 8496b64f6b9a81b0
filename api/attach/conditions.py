"""``attach --mode schedule``: podledger's group conditions written to the cluster.

When podledger's worker (on the ledger) decides a group's ``PodGroupInitiallyScheduled`` /
``CompositePodGroupInitiallyScheduled`` condition (a ``PodGroupConditionChanged`` /
``CompositePodGroupConditionChanged`` with a ``cycle`` in its meta), and the group is podledger's
(one of its pods, or of its descendants' pods for a CompositePodGroup, has the ``schedulerName``
podledger serves), the group's newest condition of that type is written to the cluster as
kube-scheduler writes it: read the object; if the cluster's condition is already True and the
new one is not, keep it (never regress); if status, reason and message are the same, write
nothing; else a strategic merge patch of ``status.conditions`` on the ``status`` subresource
(``lastTransitionTime`` kept when the status does not flip, ``observedGeneration`` = the
object's ``metadata.generation`` when it has one).

Each outcome is one ``PodGroupConditionSent`` / ``CompositePodGroupConditionSent`` event
(stream ``attach/podgroup/NS/NAME``): ``patched``, ``unchanged``, ``kept`` (never regress),
``gone`` (404: the group no longer exists) or ``failed`` (with the HTTP code and message), with
the ``attempt`` and the ``decision_position``. A failed call is retried with exponential
backoff (0.5 s doubling), at most ``max_attempts`` times per process (a restart tries again), as
the binder retries binds. A newer decision about the same condition supersedes an older one
that was not sent yet.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from api.attach.kinds import BY_KIND
from api.attach.remote import Remote, RemoteError
from ledger import writer
from ledger.store import NewEvent

CONDITION_TYPES = {
    "PodGroup": "PodGroupInitiallyScheduled",
    "CompositePodGroup": "CompositePodGroupInitiallyScheduled",
}
DONE = ("patched", "unchanged", "kept", "gone")

PENDING_SQL = """
SELECT e.position, e.type, e.data->>'group', e.data->>'type', e.data->>'status', e.data->>'reason',
       coalesce(e.data->>'message', ''), e.effective_at
FROM events e
WHERE e.type IN ('PodGroupConditionChanged', 'CompositePodGroupConditionChanged') AND e.meta ? 'cycle'
  AND e.data->>'type' IN ('PodGroupInitiallyScheduled', 'CompositePodGroupInitiallyScheduled')
  -- only the newest decision about a group's condition is sent
  AND NOT EXISTS (
      SELECT 1 FROM events n
      WHERE n.type = e.type AND n.meta ? 'cycle' AND n.position > e.position
        AND n.data->>'group' = e.data->>'group' AND n.data->>'type' = e.data->>'type')
  AND NOT EXISTS (
      SELECT 1 FROM events s
      WHERE s.type IN ('PodGroupConditionSent', 'CompositePodGroupConditionSent')
        AND s.data->>'outcome' IN ('patched', 'unchanged', 'kept', 'gone')
        AND (s.data->>'decision_position')::bigint = e.position)
ORDER BY e.position
LIMIT 200
"""

GROUPS_SQL = """
SELECT kind, name, object->'spec'->>'parentCompositePodGroupName'
FROM objects WHERE namespace = :ns AND kind IN ('PodGroup', 'CompositePodGroup')
"""

OURS_SQL = """
SELECT 1 FROM objects
WHERE kind = 'Pod' AND namespace = :ns
  AND object->'spec'->'schedulingGroup'->>'podGroupName' = ANY(:groups)
  AND coalesce(object->'spec'->>'schedulerName', 'default-scheduler') = :profile
LIMIT 1
"""


@dataclass(frozen=True)
class Decision:
    position: int
    kind: str  # PodGroup | CompositePodGroup
    group: str  # ns/name
    type: str
    status: str
    reason: str
    message: str
    at: datetime


def rfc3339(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def leaves(conn: Connection, kind: str, ns: str, name: str) -> list[str]:
    """The PodGroups of a group's tree (the group itself for a PodGroup)."""
    if kind == "PodGroup":
        return [name]
    children: dict[str, list[tuple[str, str]]] = {}
    for k, n, parent in conn.execute(sa.text(GROUPS_SQL), {"ns": ns}).all():
        if parent:
            children.setdefault(str(parent), []).append((str(k), str(n)))
    out, todo, seen = [], [name], {name}
    while todo:
        for k, n in children.get(todo.pop(), []):
            if k == "PodGroup":
                out.append(n)
            elif n not in seen:  # a cycle in a bad layout ends here
                seen.add(n)
                todo.append(n)
    return out


@dataclass
class ConditionWriter:
    engine: Engine
    remote: Remote
    cluster: str
    profile: str = "podledger"
    max_attempts: int = 5
    backoff: float = 0.5
    attempts: dict[int, tuple[int, float]] = field(default_factory=dict)  # decision -> (tries, not before)
    sent: int = 0
    failed: int = 0

    def pending(self) -> list[Decision]:
        out = []
        with self.engine.connect() as conn:
            for r in conn.execute(sa.text(PENDING_SQL)).all():
                kind = "CompositePodGroup" if r[1].startswith("Composite") else "PodGroup"
                d = Decision(int(r[0]), kind, str(r[2]), str(r[3]), str(r[4]), str(r[5]), str(r[6]), r[7])
                ns, _, name = d.group.partition("/")
                groups = leaves(conn, kind, ns, name)
                params = {"ns": ns, "groups": groups, "profile": self.profile}
                if groups and conn.execute(sa.text(OURS_SQL), params).first() is not None:
                    out.append(d)
        return out

    def run_once(self) -> int:
        """Send every pending condition whose backoff has passed; returns the calls made."""
        calls = 0
        now = time.monotonic()
        for d in self.pending():
            tries, not_before = self.attempts.get(d.position, (0, 0.0))
            if tries >= self.max_attempts or now < not_before:
                continue
            calls += 1
            outcome, code, message = self.send(d)
            self._record(d, tries + 1, outcome, code, message)
            if outcome in DONE:
                self.sent += 1
                self.attempts.pop(d.position, None)
            else:
                self.failed += 1
                self.attempts[d.position] = (tries + 1, now + self.backoff * (2**tries))
        return calls

    def _path(self, d: Decision) -> str:
        ns, _, name = d.group.partition("/")
        return f"{BY_KIND[d.kind].path(ns)}/{name}"

    def send(self, d: Decision) -> tuple[str, int | None, str]:
        """Read the cluster's object, then patch its condition unless it must stay as it is."""
        try:
            obj = self.remote.get_json(self._path(d))
        except RemoteError as exc:
            return ("gone" if exc.status == 404 else "failed"), exc.status, str(exc)[:500]
        have = next(
            (c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == d.type), None
        )
        if have is not None:
            if have.get("status") == "True" and d.status != "True":
                return "kept", None, "the cluster's condition is True and never regresses"
            if (have.get("status"), have.get("reason"), have.get("message") or "") == (
                d.status,
                d.reason,
                d.message,
            ):
                return "unchanged", None, ""
        flips = have is None or have.get("status") != d.status
        cond: dict[str, Any] = {
            "type": d.type,
            "status": d.status,
            "reason": d.reason,
            "message": d.message,
            "lastTransitionTime": rfc3339(d.at) if flips else have.get("lastTransitionTime") or rfc3339(d.at),  # type: ignore[union-attr]
        }
        generation = (obj.get("metadata") or {}).get("generation")
        if isinstance(generation, int):
            cond["observedGeneration"] = generation
        try:
            self.remote.patch_json(f"{self._path(d)}/status", {"status": {"conditions": [cond]}})
        except RemoteError as exc:
            if exc.status == 404:
                return "gone", 404, str(exc)[:500]
            return "failed", exc.status, str(exc)[:500]
        return "patched", 200, ""

    def _record(self, d: Decision, attempt: int, outcome: str, code: int | None, message: str) -> None:
        data: dict[str, Any] = {
            "group": d.group,
            "type": d.type,
            "status": d.status,
            "reason": d.reason,
            "cluster": self.cluster,
            "decision_position": d.position,
            "attempt": attempt,
            "outcome": outcome,
            "code": code,
            "message": message,
        }
        ns, _, name = d.group.partition("/")
        meta = {"actor": f"attach/{self.cluster}", "via": "attach", "attach": {"cluster": self.cluster}}
        writer.write(
            self.engine,
            [NewEvent(f"attach/{d.kind.lower()}/{ns}/{name}", f"{d.kind}ConditionSent", data, meta)],
        )
