"""``attach --mode schedule``: podledger's worker decides, ``attach`` tells the cluster.

Every ``PodBound`` decision of podledger's own worker (a ``cycle`` in its meta) that is still the
pod's current placement in the ledger, for a pod whose ``schedulerName`` is podledger's profile
name, is sent to the cluster through the pods/binding subresource. Each call's outcome is one
``PodBindingSent`` event (``bound`` or ``failed`` with the HTTP code and message); a failed call
is retried with exponential backoff, at most ``max_attempts`` times per process (a restart tries
again). A 409 whose pod already sits on the decided node (a call whose answer was lost before a
crash) counts as bound. The cluster's watch then shows the pod on that node, and the mirror,
which finds the ledger already agreeing, appends nothing for it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from api.attach.remote import Remote, RemoteError
from ledger import writer
from ledger.store import NewEvent

PENDING_SQL = """
SELECT e.position, e.data->>'pod', e.data->>'node'
FROM events e
JOIN objects o ON o.kind = 'Pod' AND o.namespace = split_part(e.data->>'pod', '/', 1)
               AND o.name = split_part(e.data->>'pod', '/', 2)
WHERE e.type = 'PodBound' AND e.meta ? 'cycle'
  AND o.status->>'nodeName' = e.data->>'node'
  AND coalesce(o.object->'spec'->>'schedulerName', :default) = :profile
  AND NOT EXISTS (
      SELECT 1 FROM events s
      WHERE s.type = 'PodBindingSent' AND s.data->>'outcome' = 'bound'
        AND (s.data->>'decision_position')::bigint = e.position)
ORDER BY e.position
LIMIT 200
"""


@dataclass
class Binder:
    engine: Engine
    remote: Remote
    cluster: str
    profile: str = "default-scheduler"
    max_attempts: int = 5
    backoff: float = 0.5
    attempts: dict[int, tuple[int, float]] = field(default_factory=dict)  # decision -> (tries, not before)
    sent: int = 0
    failed: int = 0

    def pending(self) -> list[tuple[int, str, str]]:
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.text(PENDING_SQL), {"default": "default-scheduler", "profile": self.profile}
            ).all()
        return [(int(r[0]), str(r[1]), str(r[2])) for r in rows]

    def run_once(self) -> int:
        """Send every pending decision whose backoff has passed; returns the calls made."""
        calls = 0
        now = time.monotonic()
        for position, pod, node in self.pending():
            tries, not_before = self.attempts.get(position, (0, 0.0))
            if tries >= self.max_attempts or now < not_before:
                continue
            calls += 1
            outcome, code, message = self._send(pod, node)
            self._record(position, pod, node, tries + 1, outcome, code, message)
            if outcome == "bound":
                self.sent += 1
                self.attempts.pop(position, None)
            else:
                self.failed += 1
                self.attempts[position] = (tries + 1, now + self.backoff * (2**tries))
        return calls

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
        meta = {"actor": f"attach/{self.cluster}", "via": "attach", "attach": {"cluster": self.cluster}}
        ns, _, name = pod.partition("/")
        writer.write(self.engine, [NewEvent(f"attach/binding/{ns}/{name}", "PodBindingSent", data, meta)])
