"""PodDisruptionBudget accounting: allowed disruptions and the units whose eviction violates one."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from scheduler.model import Pod, PodDisruptionBudget
from scheduler.preemption.units import Unit
from scheduler.state import State


def _scaled(v: int | str, expected: int) -> int:
    if isinstance(v, str) and v.endswith("%"):
        return math.ceil(int(v[:-1]) * expected / 100)
    return int(v)


def allowed_disruptions(pdb: PodDisruptionBudget, pods: Iterable[Pod]) -> tuple[int, int]:
    """(disruptions ``pdb`` allows now, its healthy pods) among ``pods``: a bound pod is healthy."""
    healthy = expected = 0
    for p in pods:
        if pdb.matches(p):
            expected += 1
            if p.node_name is not None:
                healthy += 1
    if pdb.min_available is not None:
        allowed = healthy - _scaled(pdb.min_available, expected)
    elif pdb.max_unavailable is not None:
        allowed = _scaled(pdb.max_unavailable, expected) - (expected - healthy)
    else:
        allowed = healthy
    return max(0, allowed), healthy


def budget_blocks(
    pdbs: Iterable[PodDisruptionBudget], pods: Sequence[Pod], target: Pod
) -> tuple[str, int, int] | None:
    """The first PDB (by key) whose budget evicting ``target`` alone would violate, as (name,
    healthy pods it needs, healthy pods it has), or None (the Eviction API's check)."""
    for pdb in sorted(pdbs, key=lambda b: b.key):
        if pdb.matches(target):
            allowed, healthy = allowed_disruptions(pdb, pods)
            if allowed < 1:
                return pdb.name, healthy - allowed, healthy
    return None


class Budgets:
    """Allowed disruptions of every PDB, from the current state."""

    def __init__(self, state: State) -> None:
        self.pdbs: list[tuple[PodDisruptionBudget, int]] = [
            (state.pdbs[key], allowed_disruptions(state.pdbs[key], state.pods.values())[0])
            for key in sorted(state.pdbs)
        ]

    def _hits(self, state: State, unit: Unit) -> list[int]:
        out = [0] * len(self.pdbs)
        for k in unit.pods:
            p = state.pods.get(k)
            if p is None:
                continue
            for i, (pdb, _) in enumerate(self.pdbs):
                if pdb.matches(p):
                    out[i] += 1
        return out

    def violating(self, state: State, units: Sequence[Unit]) -> set[str]:
        """Units (processed in the given order against shared budgets) that violate a PDB."""
        if not self.pdbs:
            return set()
        left = [a for _, a in self.pdbs]
        out: set[str] = set()
        for u in units:
            hits = self._hits(state, u)
            bad = False
            for i, h in enumerate(hits):
                if h:
                    left[i] -= h
                    if left[i] < 0:
                        bad = True
            if bad:
                out.add(u.key)
        return out

    def violates_alone(self, state: State, unit: Unit) -> bool:
        return any(h > a for h, (_, a) in zip(self._hits(state, unit), self.pdbs, strict=True))
