"""TaintToleration: NoSchedule/NoExecute taints filter, PreferNoSchedule taints score.

Filter message (kube-scheduler): ``node(s) had untolerated taint {<key>: <value>}`` for the first
untolerated taint of the node, UnschedulableAndUnresolvable. Score: number of intolerable
PreferNoSchedule taints, normalized in reverse (fewer -> higher).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from scheduler.framework import Code, FilterResult, FilterSignature
from scheduler.messages import ERR_UNTOLERATED_TAINT
from scheduler.model import Taint, Toleration
from scheduler.snapshot import Snapshot

NAME = "TaintToleration"
NO_SCHEDULE = "NoSchedule"
NO_EXECUTE = "NoExecute"
PREFER_NO_SCHEDULE = "PreferNoSchedule"


def tolerates(t: Toleration, taint: Taint) -> bool:
    """v1.Toleration.ToleratesTaint."""
    if t.effect and t.effect != taint.effect:
        return False
    if t.key and t.key != taint.key:
        return False
    if t.operator in ("", "Equal"):
        return t.value == taint.value
    if t.operator == "Exists":
        return True
    return False


def first_untolerated(taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...]) -> Taint | None:
    for taint in taints:
        if taint.effect not in (NO_SCHEDULE, NO_EXECUTE):
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def reason(taint: Taint) -> str:
    return ERR_UNTOLERATED_TAINT % (taint.key, taint.value)


def filter_nodes(tolerations: tuple[Toleration, ...], snap: Snapshot) -> FilterResult:
    snap.refresh()
    sets = snap.taint_sets
    if len(sets) == 1 and not sets[0]:
        return FilterResult(NAME, snap.all_nodes, [], Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
    per_set: list[str | None] = []
    for ts in sets:
        bad = first_untolerated(ts, tolerations)
        per_set.append(reason(bad) if bad is not None else None)
    set_ok = np.array([r is None for r in per_set], dtype=np.bool_)
    ok = set_ok[snap.taint_set]
    reasons: dict[str, list[int]] = {}
    for sid, r in enumerate(per_set):
        if r is not None:
            reasons.setdefault(r, []).append(sid)
    out: list[tuple[str, npt.NDArray[np.bool_]]] = []
    for r, sids in sorted(reasons.items()):
        lut = np.zeros(len(sets), dtype=np.bool_)
        lut[sids] = True
        out.append((r, lut[snap.taint_set]))
    return FilterResult(NAME, ok, out, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)


def filter_node(tolerations: tuple[Toleration, ...], taints: tuple[Taint, ...]) -> list[str]:
    bad = first_untolerated(taints, tolerations)
    return [reason(bad)] if bad is not None else []


def count_intolerable_prefer(taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...]) -> int:
    prefer = tuple(t for t in tolerations if t.effect in ("", PREFER_NO_SCHEDULE))
    n = 0
    for taint in taints:
        if taint.effect != PREFER_NO_SCHEDULE:
            continue
        if not any(tolerates(t, taint) for t in prefer):
            n += 1
    return n


def score_raw(tolerations: tuple[Toleration, ...], snap: Snapshot) -> npt.NDArray[np.int64] | None:
    """Raw per-node counts; None when every node has the same count (no effect on ranking)."""
    snap.refresh()
    per_set = np.array([count_intolerable_prefer(ts, tolerations) for ts in snap.taint_sets], dtype=np.int64)
    if len(per_set) == 0 or per_set.min() == per_set.max():
        return None
    out: npt.NDArray[np.int64] = per_set[snap.taint_set]
    return out


class TaintToleration:
    """Filter and Score plugin (fewer intolerable PreferNoSchedule taints score higher)."""

    name = NAME
    default_weight = 3
    reverse = True

    def filter(self, sig: FilterSignature, snap: Snapshot) -> FilterResult:
        return filter_nodes(sig.tolerations, snap)

    def score_raw(self, sig: FilterSignature, snap: Snapshot) -> npt.NDArray[np.int64] | None:
        return score_raw(sig.tolerations, snap)
