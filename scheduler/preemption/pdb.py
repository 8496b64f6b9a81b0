"""PodDisruptionBudget accounting: allowed disruptions and the units whose eviction violates one."""

from __future__ import annotations

import math
from collections.abc import Sequence

from scheduler.model import PodDisruptionBudget
from scheduler.preemption.units import Unit
from scheduler.state import State


def _scaled(v: int | str, expected: int) -> int:
    if isinstance(v, str) and v.endswith("%"):
        return math.ceil(int(v[:-1]) * expected / 100)
    return int(v)


class Budgets:
    """Allowed disruptions of every PDB, from the current state."""

    def __init__(self, state: State) -> None:
        self.pdbs: list[tuple[PodDisruptionBudget, int]] = []
        for key in sorted(state.pdbs):
            pdb = state.pdbs[key]
            healthy = expected = 0
            for p in state.pods.values():
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
            self.pdbs.append((pdb, max(0, allowed)))

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
