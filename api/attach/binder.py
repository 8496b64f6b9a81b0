"""``attach --mode schedule``: podledger's worker decides, ``attach`` tells the cluster.

Every ``PodBound`` decision of podledger's own worker (a ``cycle`` in its meta) that is still the
pod's current placement in the ledger, for a pod whose ``schedulerName`` is podledger's profile
name, is sent to the cluster through the pods/binding subresource. Each call's outcome is one
``PodBindingSent`` event (``bound``, ``gone`` for a 404 or ``failed``, with the HTTP code and message); a failed call
is retried with exponential backoff, at most 5 times per process (a restart tries
again). A 409 whose pod already sits on the decided node (a call whose answer was lost before a
crash) counts as bound. The cluster's watch then shows the pod on that node, and the mirror,
which finds the ledger already agreeing, appends nothing for it.

Victims of podledger's preemptions (its ``PodPreempted`` decisions) are evicted through the
Eviction API first; each call is one ``PodEvictionSent`` (``evicted``, ``gone``, ``refused`` when
the server answers 429 because a PodDisruptionBudget would be violated, or ``failed``), refused
and failed calls retried with backoff (doubling to 30 s, without a cap on tries). The server's
answer is what honours the budgets: a preemptor is not bound in the cluster until each of its
victims has been evicted.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from api.attach.remote import Remote, RemoteError
from api.attach.retries import Retries
from api.services.commands.bindings import binding_sent
from api.services.commands.evictions import eviction_sent
from ledger.database import Database

PENDING_SQL = """
SELECT e.position, e.data->>'pod', e.data->>'node'
FROM events e
JOIN objects o ON o.kind = 'Pod' AND o.namespace = split_part(e.data->>'pod', '/', 1)
               AND o.name = split_part(e.data->>'pod', '/', 2)
WHERE e.type = 'PodBound' AND e.meta ? 'cycle'
  AND o.status->>'nodeName' = e.data->>'node'
  AND coalesce(o.object->'spec'->>'schedulerName', %(default)s) = %(profile)s
  -- a preemptor waits until the cluster has evicted its victims (as a nominated pod waits)
  AND NOT EXISTS (
      SELECT 1 FROM events p
      WHERE p.type = 'PodPreempted' AND p.meta ? 'cycle'
        AND p.data->>'preemptor' IN (e.data->>'pod', e.data->>'group')
        AND NOT EXISTS (
            SELECT 1 FROM events s
            WHERE s.type = 'PodEvictionSent' AND s.data->>'outcome' IN ('evicted', 'gone')
              AND (s.data->>'decision_position')::bigint = p.position))
  AND NOT EXISTS (
      SELECT 1 FROM events s
      WHERE s.type = 'PodBindingSent' AND s.data->>'outcome' IN ('bound', 'gone')
        AND (s.data->>'decision_position')::bigint = e.position)
ORDER BY e.position
LIMIT 200
"""

EVICTIONS_SQL = """
SELECT e.position, e.data->>'victim', e.data->>'preemptor'
FROM events e
WHERE e.type = 'PodPreempted' AND e.meta ? 'cycle'
  AND NOT EXISTS (
      SELECT 1 FROM events s
      WHERE s.type = 'PodEvictionSent' AND s.data->>'outcome' IN ('evicted', 'gone')
        AND (s.data->>'decision_position')::bigint = e.position)
ORDER BY e.position
LIMIT 200
"""


@dataclass
class Binder:
    db: Database
    remote: Remote
    cluster: str
    profile: str = "podledger"
    binds: Retries = field(default_factory=Retries)
    # no cap on tries: a 429 means "not now" (a budget), and the victim must go eventually
    evictions: Retries = field(default_factory=lambda: Retries(cap=30.0, limit=None))
    sent: int = 0
    evicted: int = 0
    failed: int = 0

    def pending(self) -> list[tuple[int, str, str]]:
        with self.db.connect() as conn:
            rows = conn.execute(
                PENDING_SQL, {"default": "default-scheduler", "profile": self.profile}
            ).fetchall()
        return [(int(r[0]), str(r[1]), str(r[2])) for r in rows]

    def run_once(self) -> int:
        """Evict the victims of podledger's preemptions, then send every pending binding whose
        backoff has passed; returns the calls made."""
        calls = self.run_evictions()
        now = time.monotonic()
        for position, pod, node in self.pending():
            tries = self.binds.due(position, now)
            if tries is None:
                continue
            calls += 1
            outcome, code, message = self._send(pod, node)
            self._record(position, pod, node, tries + 1, outcome, code, message)
            if outcome in ("bound", "gone"):  # gone: the pod was deleted meanwhile, nothing to retry
                self.sent += outcome == "bound"
                self.binds.done(position)
            else:
                self.failed += 1
                self.binds.failed(position, tries, now)
        return calls

    def run_evictions(self) -> int:
        """Evict every victim of podledger's preemption not evicted yet (backoff as for binds;
        a 429 from a disruption budget is retried like any refusal)."""
        with self.db.connect() as conn:
            rows = conn.execute(EVICTIONS_SQL).fetchall()
        calls = 0
        now = time.monotonic()
        for position, victim, preemptor in rows:
            tries = self.evictions.due(int(position), now)
            if tries is None:
                continue
            calls += 1
            outcome, code, message = self._evict(str(victim))
            data: dict[str, Any] = {
                "pod": victim,
                "preemptor": preemptor,
                "cluster": self.cluster,
                "decision_position": int(position),
                "attempt": tries + 1,
                "outcome": outcome,
                "code": code,
                "message": message,
            }
            with self.db.unit_of_work() as uow:
                eviction_sent(uow, data, self._meta())
                uow.commit()
            if outcome in ("evicted", "gone"):
                self.evicted += 1
                self.evictions.done(int(position))
            else:
                self.failed += 1
                self.evictions.failed(int(position), tries, now)
        return calls

    def _evict(self, pod: str) -> tuple[str, int | None, str]:
        ns, _, name = pod.partition("/")
        body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": ns}}
        try:
            self.remote.post_json(f"/api/v1/namespaces/{ns}/pods/{name}/eviction", body)
            return "evicted", 201, ""
        except RemoteError as exc:
            if exc.status == 404:
                return "gone", 404, str(exc)[:500]
            if exc.status == 429:
                return "refused", 429, str(exc)[:500]
            return "failed", exc.status, str(exc)[:500]

    def _meta(self) -> dict[str, Any]:
        return {"actor": f"attach/{self.cluster}", "via": "attach", "attach": {"cluster": self.cluster}}

    def _send(self, pod: str, node: str) -> tuple[str, int | None, str]:
        ns, _, name = pod.partition("/")
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": ns},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        try:
            self.remote.post_json(f"/api/v1/namespaces/{ns}/pods/{name}/binding", body)
            return "bound", 201, ""
        except RemoteError as exc:
            if exc.status == 409 and self._already_on(ns, name, node):
                return "bound", 409, str(exc)[:500]
            if exc.status == 404:  # the pod was deleted meanwhile: as an eviction calls it
                return "gone", 404, str(exc)[:500]
            return "failed", exc.status, str(exc)[:500]

    def _already_on(self, ns: str, name: str, node: str) -> bool:
        try:
            pod = self.remote.get_json(f"/api/v1/namespaces/{ns}/pods/{name}")
        except RemoteError:
            return False
        return bool((pod.get("spec") or {}).get("nodeName") == node)

    def _record(
        self, position: int, pod: str, node: str, attempt: int, outcome: str, code: int | None, message: str
    ) -> None:
        data: dict[str, Any] = {
            "pod": pod,
            "node": node,
            "cluster": self.cluster,
            "decision_position": position,
            "attempt": attempt,
            "outcome": outcome,
            "code": code,
            "message": message,
        }
        with self.db.unit_of_work() as uow:
            binding_sent(uow, data, self._meta())
            uow.commit()
