"""Helpers for the pure scheduler tests (no DB): object builders and a tiny event driver."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from scheduler.decisions import CycleResult, Decision
from scheduler.model import (
    CompositePodGroup,
    Node,
    NodeSelectorTerm,
    Pod,
    PodGroup,
    Requirement,
    SchedulerConfig,
    Taint,
    Toleration,
)
from scheduler.scheduler import Scheduler

GI = 1 << 30
# Preemption off: these tests check scheduling alone (tests/scheduler/test_preemption.py covers it).
# The core is tested without preemption (scheduler/preemption/ has its own tests); PreFilter and
# PostFilter plugins are swapped in through Scheduler.use_profile where needed.
ZERO_BACKOFF = SchedulerConfig(
    backoff_initial_seconds=0.0, backoff_max_seconds=0.0, preemption_algorithm="None"
)
DEFAULT_BACKOFF = SchedulerConfig(preemption_algorithm="None")


def node(
    name: str,
    cpu: float = 2,
    labels: dict[str, str] | None = None,
    *,
    mem_gi: int = 64,
    pods: int = 110,
    taints: tuple[Taint, ...] = (),
    unschedulable: bool = False,
    extra: dict[str, int] | None = None,
) -> Node:
    alloc = {"cpu": int(cpu * 1000), "memory": mem_gi * GI, "pods": pods}
    alloc.update(extra or {})
    return Node(name, alloc, dict(labels or {}), taints, unschedulable)


def pod(
    name: str,
    cpu: float = 1,
    group: str | None = None,
    prio: int = 100,
    *,
    ns: str = "default",
    node_name: str | None = None,
    mem_gi: float = 0,
    gates: tuple[str, ...] = (),
    **kw: Any,
) -> Pod:
    req = {"cpu": int(cpu * 1000)}
    if mem_gi:
        req["memory"] = int(mem_gi * GI)
    return Pod(
        ns, name, req, priority=prio, pod_group=group, node_name=node_name, scheduling_gates=gates, **kw
    )


def pg(
    name: str,
    min_count: int | None = None,
    prio: int = 100,
    *,
    key: str | None = None,
    parent: str | None = None,
    ns: str = "default",
    **kw: Any,
) -> PodGroup:
    return PodGroup(ns, name, min_count=min_count, priority=prio, topology_key=key, parent=parent, **kw)


def cpg(
    name: str,
    min_groups: int | None = None,
    prio: int = 100,
    *,
    key: str | None = None,
    parent: str | None = None,
    ns: str = "default",
    **kw: Any,
) -> CompositePodGroup:
    return CompositePodGroup(
        ns, name, min_group_count=min_groups, priority=prio, topology_key=key, parent=parent, **kw
    )


def req(key: str, op: str, *values: str) -> NodeSelectorTerm:
    return NodeSelectorTerm((Requirement(key, op, tuple(values)),))


class Sim:
    """Applies objects in order (seq = order of observation), then runs until idle."""

    def __init__(self, config: SchedulerConfig | None = ZERO_BACKOFF) -> None:
        self.s = Scheduler(config)
        self.now = 0.0
        self.seq = 0
        self.results: list[CycleResult] = []

    def _seq(self, o: Any) -> Any:
        self.seq += 1
        return replace(o, seq=self.seq) if getattr(o, "seq", 0) == 0 else o

    def apply(self, *objs: Any, run: bool = True) -> list[CycleResult]:
        for o in objs:
            if isinstance(o, Node):
                self.s.upsert_node(self._seq(o))
            elif isinstance(o, Pod):
                old = self.s.pod(o.key)
                o = replace(o, seq=old.seq) if old is not None else self._seq(o)
                self.s.upsert_pod(o, self.now)
            elif isinstance(o, PodGroup):
                self.s.upsert_pod_group(self._seq(o), self.now)
            elif isinstance(o, CompositePodGroup):
                self.s.upsert_composite(self._seq(o), self.now)
            else:
                raise TypeError(o)
        return self.run() if run else []

    def delete(self, kind: str, key: str, run: bool = True) -> list[CycleResult]:
        if kind == "Pod":
            self.s.remove_pod(key, self.now)
        elif kind == "Node":
            self.s.remove_node(key)
        elif kind == "PodGroup":
            self.s.remove_pod_group(key, self.now)
        elif kind == "CompositePodGroup":
            self.s.remove_composite(key, self.now)
        return self.run() if run else []

    def run(self) -> list[CycleResult]:
        out = self.s.run_until_idle(self.now, max_cycles=10_000)
        assert len(out) < 10_000, "run_until_idle did not settle"
        self.results.extend(out)
        return out

    def advance(self, seconds: float) -> list[CycleResult]:
        end = self.now + seconds
        out: list[CycleResult] = []
        while True:
            t = self.s.next_timer(self.now)
            if t is None or t > end:
                break
            self.now = t
            out.extend(self.run())
        self.now = end
        out.extend(self.run())
        return out

    # ------------------------------------------------------------- reading
    def node_of(self, name: str, ns: str = "default") -> str | None:
        p = self.s.pod(f"{ns}/{name}")
        assert p is not None, name
        return p.node_name

    def bound(self, *names: str) -> bool:
        return all(self.node_of(n) is not None for n in names)

    def cond(self, group: str, ctype: str = "PodGroupInitiallyScheduled") -> tuple[str, str, str] | None:
        return self.s.group_conditions(f"default/{group}").get(ctype)

    def decisions(self, results: list[CycleResult] | None = None) -> list[Decision]:
        return [d for r in (self.results if results is None else results) for d in r.decisions]


__all__ = [
    "Sim",
    "node",
    "pod",
    "pg",
    "cpg",
    "req",
    "GI",
    "ZERO_BACKOFF",
    "DEFAULT_BACKOFF",
    "Taint",
    "Toleration",
]
