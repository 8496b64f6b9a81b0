"""Victim units (§8): a scheduled pod belongs to the unit of its highest All ancestor; importance order."""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.model import ALL, SINGLE, Pod
from scheduler.state import State

RANK_CPG, RANK_PG, RANK_POD = 3, 2, 1


@dataclass(frozen=True, slots=True)
class Unit:
    key: str  # "Pod:ns/name" | "PodGroup:ns/name" | "CompositePodGroup:ns/name"
    mode: str  # Single | All
    priority: int
    rank: int
    pods: tuple[str, ...]  # scheduled pods, sorted
    start: float
    uid: str

    def importance(self) -> tuple[int, int, int, float, str, str]:
        """Sort key, most important first (see module docstring)."""
        return (-self.priority, -self.rank, -len(self.pods), self.start, self.uid, self.key)


def _start(p: Pod) -> float:
    return p.start_time if p.start_time is not None else p.created_at


class Units:
    """Victim units of scheduled pods, built lazily and cached for one preemption."""

    def __init__(self, state: State) -> None:
        self.state = state
        self._members = state.workloads_on  # State.is_member without the gate lookup per pod
        self._by_pod: dict[str, Unit | None] = {}
        self._anc: dict[str, tuple[int, str, str] | None] = {}  # pg key -> (prio, all kind, all key)
        self._groups: dict[str, Unit] = {}

    def _bound(self, key: str) -> Pod | None:
        p = self.state.pods.get(key)
        if p is None or p.node_name is None or not self.state.snap.has_pod(key):
            return None
        return p

    def _ancestry(self, gk: str) -> tuple[int, str, str] | None:
        """(priority of the highest existing group, kind and key of the highest All ancestor
        or ("", "")); None when the PodGroup itself is unknown."""
        if gk in self._anc:
            return self._anc[gk]
        st = self.state
        pg = st.pod_groups.get(gk)
        res: tuple[int, str, str] | None = None
        if pg is not None:
            prio = pg.priority
            kind, akey = ("PodGroup", pg.key) if pg.disruption_mode == ALL else ("", "")
            for k in st.chain(pg).path[1:]:
                c = st.composites.get(k)
                if c is None:
                    continue
                prio = c.priority
                if c.disruption_mode == ALL:
                    kind, akey = "CompositePodGroup", c.key
            res = (prio, kind, akey)
        self._anc[gk] = res
        return res

    def _subtree_pods(self, kind: str, key: str) -> list[str]:
        st = self.state
        leaves = [key] if kind == "PodGroup" else st.subtree(key)[0]
        out: list[str] = []
        for lk in leaves:
            for pk in st.snap.group_pods.get(lk, {}):
                if self._bound(pk) is not None:
                    out.append(pk)
        return sorted(out)

    def of(self, key: str) -> Unit | None:
        if key in self._by_pod:
            return self._by_pod[key]
        p = self._bound(key)
        u: Unit | None = None
        if p is not None:
            st = self.state
            anc = self._ancestry(f"{p.namespace}/{p.pod_group}") if self._members and p.pod_group else None
            if anc is None:
                rank = RANK_POD
                u = Unit(f"Pod:{key}", SINGLE, p.priority, rank, (key,), _start(p), p.uid or key)
            elif not anc[1]:
                u = Unit(f"Pod:{key}", SINGLE, anc[0], RANK_PG, (key,), _start(p), p.uid or key)
            else:
                ukey = f"{anc[1]}:{anc[2]}"
                u = self._groups.get(ukey)
                if u is None:
                    pods = self._subtree_pods(anc[1], anc[2])
                    if key not in pods:
                        pods = sorted([*pods, key])
                    obj = st.pod_groups.get(anc[2]) if anc[1] == "PodGroup" else st.composites.get(anc[2])
                    uid = (obj.uid if obj is not None else "") or anc[2]
                    rank = RANK_CPG if anc[1] == "CompositePodGroup" else RANK_PG
                    start = min(_start(st.pods[k]) for k in pods)
                    u = Unit(ukey, ALL, anc[0], rank, tuple(pods), start, uid)
                    self._groups[ukey] = u
                    for k in pods:
                        self._by_pod[k] = u
        self._by_pod[key] = u
        return u

    def all_lower(self, priority: int) -> list[Unit]:
        """Every unit with priority < ``priority``, most important first."""
        seen: dict[str, Unit] = {}
        st = self.state
        for k, p in st.pods.items():
            if p.node_name is None:
                continue
            u = self.of(k)
            if u is not None and u.priority < priority and u.key not in seen:
                seen[u.key] = u
        return sorted(seen.values(), key=Unit.importance)
