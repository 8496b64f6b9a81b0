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
backoff (0.5 s doubling), at most 5 times per process (a restart tries again), as
the binder retries binds. A newer decision about the same condition supersedes an older one
that was not sent yet.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from api.attach.kinds import BY_KIND
from api.attach.remote import Remote, RemoteError
from api.attach.retries import Retries
from api.services.commands.conditions import condition_sent
from ledger.database import Database

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
  -- the group is podledger's: a pod of its tree names podledger's profile
  AND EXISTS (
      WITH RECURSIVE tree(kind, name) AS (
          SELECT CASE WHEN e.type = 'PodGroupConditionChanged' THEN 'PodGroup' ELSE 'CompositePodGroup' END,
                 split_part(e.data->>'group', '/', 2)
          UNION  -- not ALL: a cycle in a bad layout ends
          SELECT g.kind, g.name FROM objects g JOIN tree t ON t.kind = 'CompositePodGroup'
          WHERE g.kind IN ('PodGroup', 'CompositePodGroup')
            AND g.namespace = split_part(e.data->>'group', '/', 1)
            AND g.object->'spec'->>'parentCompositePodGroupName' = t.name)
      SELECT 1 FROM tree t JOIN objects p ON t.kind = 'PodGroup'
      WHERE p.kind = 'Pod' AND p.namespace = split_part(e.data->>'group', '/', 1)
        AND p.object->'spec'->'schedulingGroup'->>'podGroupName' = t.name
        AND coalesce(p.object->'spec'->>'schedulerName', 'default-scheduler') = %(profile)s)
ORDER BY e.position
LIMIT 200
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


@dataclass
class ConditionWriter:
    db: Database
    remote: Remote
    cluster: str
    profile: str = "podledger"
    retries: Retries = field(default_factory=Retries)
    sent: int = 0
    failed: int = 0

    def pending(self) -> list[Decision]:
        with self.db.connect() as conn:
            rows = conn.execute(PENDING_SQL, {"profile": self.profile}).fetchall()
        return [
            Decision(
                int(r[0]),
                "CompositePodGroup" if r[1].startswith("Composite") else "PodGroup",
                str(r[2]),
                str(r[3]),
                str(r[4]),
                str(r[5]),
                str(r[6]),
                r[7],
            )
            for r in rows
        ]

    def run_once(self) -> int:
        """Send every pending condition whose backoff has passed; returns the calls made."""
        calls = 0
        now = time.monotonic()
        for d in self.pending():
            tries = self.retries.due(d.position, now)
            if tries is None:
                continue
            calls += 1
            outcome, code, message = self.send(d)
            self._record(d, tries + 1, outcome, code, message)
            if outcome in DONE:
                self.sent += 1
                self.retries.done(d.position)
            else:
                self.failed += 1
                self.retries.failed(d.position, tries, now)
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
        meta = {"actor": f"attach/{self.cluster}", "via": "attach", "attach": {"cluster": self.cluster}}
        with self.db.unit_of_work() as uow:
            condition_sent(uow, d.kind, data, meta)
            uow.commit()
