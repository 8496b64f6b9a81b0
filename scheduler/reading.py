"""The read side of ``Scheduler``: pods, conditions, pending reasons, usage and per-node verdicts."""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.conditions import KIND_CPG, KIND_PG
from scheduler.model import Pod
from scheduler.queue import SchedulingQueue
from scheduler.reference import NodeVerdict, node_verdicts
from scheduler.state import State


class Reading:
    state: State
    queue: SchedulingQueue

    def pod(self, key: str) -> Pod | None:
        return self.state.pods.get(key)

    def pods(self) -> list[Pod]:
        return [self.state.pods[k] for k in sorted(self.state.pods)]

    def seed_condition(self, kind: str, key: str, ctype: str, status: str, reason: str, message: str) -> None:
        """Record a condition written earlier (e.g. by a previous scheduler process), so that a
        True PodGroupInitiallyScheduled is never regressed after a restart."""
        self.state.conditions.setdefault((kind, key), {})[ctype] = (status, reason, message)

    def group_conditions(self, key: str) -> dict[str, tuple[str, str, str]]:
        c = self.state.conditions.get((KIND_PG, key))
        if c is None:
            c = self.state.conditions.get((KIND_CPG, key))
        return dict(c) if c else {}

    def pending_reason(self, pod_key: str) -> tuple[str, str] | None:
        p = self.state.pods.get(pod_key)
        if p is None or p.node_name is not None:
            return None
        return self.queue.pending_reason.get(pod_key)

    def node_usage(self) -> list[tuple[str, dict[str, int], dict[str, int]]]:
        return self.state.snap.usage()

    def node_verdicts(self, pod_keys: Sequence[str]) -> list[NodeVerdict]:
        """For each known pod of ``pod_keys`` (in that order) and each node (snapshot order): does
        it pass the filters, else the first rejecting plugin and its reasons (what ``explain``
        shows). Computed by the pure-Python reference on the bound pods' usage."""
        snap = self.state.snap
        snap.refresh()
        return node_verdicts(snap.nodes, self.pods(), pod_keys)
