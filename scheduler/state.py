"""Scheduler-side cluster state: objects, the workload forest and group conditions.

The workload forest links PodGroups and CompositePodGroups through ``parent`` (same namespace).
Children are ordered by ``(seq, name)`` (first observed; KEP-6012 says creation timestamp).
A tree is keyed by its root; a parent that is missing or a parent cycle does not break the
keying: the root of a chain ending at a missing parent is that missing name, the root of a chain
entering a cycle is the smallest name of the cycle. Such trees fail runtime validation in the
cycle (``%s not found in workload forest`` / ``cycle detected in composite pod group hierarchy``).
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.model import CompositePodGroup, Pod, PodDisruptionBudget, PodGroup, SchedulerConfig
from scheduler.podsched import PodScheduler
from scheduler.snapshot import Snapshot

MAX_DEPTH = 4  # WorkloadMaxTreeDepth

PG = "pg"
CPG = "cpg"


@dataclass(frozen=True, slots=True)
class Chain:
    """Path from a leaf PodGroup up to its root (keys ``ns/name``)."""

    kind: str  # pg (standalone) | cpg (tree)
    root: str  # key of the root (may be a missing CPG name)
    path: tuple[str, ...]  # leaf first, then CPG keys upwards
    problem: str | None = None  # "missing" | "cycle" | None
    cycle: tuple[str, ...] = ()  # keys forming the cycle (in walk order, first repeated at the end)

    @property
    def entity(self) -> str:
        return f"{self.kind}/{self.root}"


def name_of(key: str) -> str:
    return key.split("/", 1)[1]


def split_entity(ekey: str) -> tuple[str, str]:
    """Queue key -> ("pod", "ns/name") | ("pg", "ns/name") | ("cpg", "ns/name")."""
    parts = ekey.split("/", 2)
    if len(parts) == 3 and parts[0] in (PG, CPG):
        return parts[0], f"{parts[1]}/{parts[2]}"
    return "pod", ekey


def ns_of(key: str) -> str:
    return key.split("/", 1)[0]


class State:
    def __init__(self, config: SchedulerConfig) -> None:
        self.config = config
        self.snap = Snapshot()
        self.podsched = PodScheduler(self.snap, config)
        self.pods: dict[str, Pod] = {}
        self.snap.resolve = self.pods.get  # pod-aware plugins read scheduled pods' objects
        self.pod_groups: dict[str, PodGroup] = {}
        self.composites: dict[str, CompositePodGroup] = {}
        self.pdbs: dict[str, PodDisruptionBudget] = {}
        self.members: dict[str, set[str]] = {}  # pg key -> pods referencing it (pending + bound)
        self.child_pgs: dict[str, set[str]] = {}  # parent cpg key -> pg keys
        self.child_cpgs: dict[str, set[str]] = {}  # parent cpg key -> cpg keys
        self.conditions: dict[tuple[str, str], dict[str, tuple[str, str, str]]] = {}
        self.added_at: dict[str, float] = {}  # pending pod -> time it entered the queue

    # --------------------------------------------------------------- gates
    def gate(self, name: str) -> bool:
        return self.config.gate(name)

    @property
    def workloads_on(self) -> bool:
        return self.gate("GenericWorkload")

    @property
    def tas_on(self) -> bool:
        return self.workloads_on and self.gate("TopologyAwareWorkloadScheduling")

    @property
    def cpg_on(self) -> bool:
        return self.tas_on and self.gate("CompositePodGroup")

    def is_member(self, pod: Pod) -> bool:
        return pod.pod_group is not None and self.workloads_on

    @staticmethod
    def group_key_of(pod: Pod) -> str:
        return f"{pod.namespace}/{pod.pod_group}"

    # -------------------------------------------------------------- forest
    def parent_key(self, ns: str, parent: str | None) -> str | None:
        if parent is None or not self.cpg_on:
            return None
        return f"{ns}/{parent}"

    def chain(self, pg: PodGroup) -> Chain:
        first = self.parent_key(pg.namespace, pg.parent)
        if first is None:
            return Chain(PG, pg.key, (pg.key,))
        path = [pg.key]
        seen: dict[str, int] = {}
        cur = first
        while True:
            if cur in seen:
                cyc = tuple(path[seen[cur] :]) + (cur,)
                root = min(path[seen[cur] :])
                return Chain(CPG, root, tuple(path), "cycle", cyc)
            seen[cur] = len(path)
            path.append(cur)
            c = self.composites.get(cur)
            if c is None:
                return Chain(CPG, cur, tuple(path), "missing")
            nxt = self.parent_key(c.namespace, c.parent)
            if nxt is None:
                return Chain(CPG, cur, tuple(path))
            cur = nxt

    def cpg_chain(self, cpg: CompositePodGroup) -> Chain:
        path = [cpg.key]
        seen: dict[str, int] = {cpg.key: 0}
        nxt = self.parent_key(cpg.namespace, cpg.parent)
        while nxt is not None:
            if nxt in seen:
                cyc = tuple(path[seen[nxt] :]) + (nxt,)
                return Chain(CPG, min(path[seen[nxt] :]), tuple(path), "cycle", cyc)
            seen[nxt] = len(path)
            path.append(nxt)
            c = self.composites.get(nxt)
            if c is None:
                return Chain(CPG, nxt, tuple(path), "missing")
            nxt = self.parent_key(c.namespace, c.parent)
        return Chain(CPG, path[-1], tuple(path))

    def children(self, cpg_key: str) -> list[tuple[str, str]]:
        """Children of a CPG in forest order: (kind, key), sorted by (seq, name, kind)."""
        out: list[tuple[int, str, str, str]] = []
        for k in self.child_pgs.get(cpg_key, ()):
            pg = self.pod_groups.get(k)
            if pg is not None:
                out.append((pg.seq, pg.name, PG, k))
        for k in self.child_cpgs.get(cpg_key, ()):
            c = self.composites.get(k)
            if c is not None:
                out.append((c.seq, c.name, CPG, k))
        out.sort()
        return [(kind, k) for _, _, kind, k in out]

    def subtree(self, cpg_key: str) -> tuple[list[str], list[str]]:
        """The walk of a CompositePodGroup's subtree (the only one): (leaf PodGroup keys, keys
        of the CompositePodGroups that exist, ``cpg_key`` first), pre-order with children in
        forest order, each CompositePodGroup visited once (a parent cycle ends the walk)."""
        leaves: list[str] = []
        cpgs: list[str] = []
        seen: set[str] = set()

        def visit(k: str) -> None:
            if k in seen:
                return
            seen.add(k)
            if k in self.composites:
                cpgs.append(k)
            for kind, ck in self.children(k):
                if kind == PG:
                    leaves.append(ck)
                else:
                    visit(ck)

        visit(cpg_key)
        return leaves, cpgs

    def tree(self, root: str) -> tuple[list[str], list[str]]:
        """``subtree`` of a root, its leaves limited to those whose chain ends at ``root``."""
        leaves, cpgs = self.subtree(root)
        return [lk for lk in leaves if self.chain(self.pod_groups[lk]).root == root], cpgs

    def entity_of(self, pod: Pod) -> str:
        """Queue entity key of a pending pod."""
        if not self.is_member(pod):
            return pod.key
        gk = self.group_key_of(pod)
        pg = self.pod_groups.get(gk)
        if pg is None:
            return f"{PG}/{gk}"
        return self.chain(pg).entity

    def link_group(self, key: str, parent: str | None, ns: str, is_cpg: bool) -> None:
        if parent is None:
            return
        pk = f"{ns}/{parent}"
        (self.child_cpgs if is_cpg else self.child_pgs).setdefault(pk, set()).add(key)

    def unlink_group(self, key: str, parent: str | None, ns: str, is_cpg: bool) -> None:
        if parent is None:
            return
        pk = f"{ns}/{parent}"
        d = self.child_cpgs if is_cpg else self.child_pgs
        s = d.get(pk)
        if s is not None:
            s.discard(key)
            if not s:
                del d[pk]

    # ------------------------------------------------------------- counts
    def scheduled_count(self, pg_key: str) -> int:
        return len(self.snap.group_pods.get(pg_key, ()))

    def all_pods_count(self, pg_key: str) -> int:
        return len(self.members.get(pg_key, ()))
