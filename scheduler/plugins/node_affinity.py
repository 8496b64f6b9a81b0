"""NodeAffinity: ``nodeSelector`` + required node affinity terms (filter), preferred terms (score).

Operators In, NotIn, Exists, DoesNotExist, Gt, Lt with Kubernetes semantics: NotIn and
DoesNotExist match nodes without the label; Gt/Lt parse both sides as int64 and never match when
either does not parse. Terms are ORed, requirements of a term ANDed, a term without requirements
matches nothing. Message ``node(s) didn't match Pod's node affinity/selector``
(UnschedulableAndUnresolvable).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from scheduler.framework import Code, FilterResult, FilterSignature
from scheduler.messages import ERR_NODE_AFFINITY as ERR_REASON_POD
from scheduler.model import NodeSelectorTerm, PreferredTerm, Requirement, parse_int64
from scheduler.snapshot import Snapshot

NAME = "NodeAffinity"

BOOL = npt.NDArray[np.bool_]


def requirement_mask(snap: Snapshot, req: Requirement) -> BOOL:
    """The nodes whose labels match ``req`` (``Requirement.matches``, vectorized), kept until
    the node set changes."""
    masks = snap.caches.requirement_masks
    cached = masks.get(req)
    if cached is not None:
        return cached
    col = snap.label(req.key)
    n = len(col.ids)
    op = req.operator
    mask: BOOL
    if op in ("In", "NotIn"):
        lut = np.zeros(len(col.values) + 1, dtype=np.bool_)
        for v in req.values:
            vid = col.value_of.get(v)
            if vid is not None:
                lut[vid + 1] = True
        inside = lut[col.ids + 1]
        mask = inside if op == "In" else ~inside
    elif op == "Exists":
        mask = col.ids >= 0
    elif op == "DoesNotExist":
        mask = col.ids < 0
    elif op in ("Gt", "Lt"):
        if len(req.values) != 1 or parse_int64(req.values[0]) is None:
            mask = np.zeros(n, dtype=np.bool_)
        else:
            bound = parse_int64(req.values[0])
            assert bound is not None
            cmp = col.ints > bound if op == "Gt" else col.ints < bound
            mask = col.int_ok & cmp
    else:
        mask = np.zeros(n, dtype=np.bool_)
    masks[req] = mask
    return mask


def term_mask(snap: Snapshot, term: NodeSelectorTerm) -> BOOL:
    if not term.match_expressions:
        return np.zeros(snap.n, dtype=np.bool_)
    mask = requirement_mask(snap, term.match_expressions[0]).copy()
    for req in term.match_expressions[1:]:
        mask &= requirement_mask(snap, req)
    return mask


def selector_mask(
    snap: Snapshot, node_selector: Mapping[str, str], terms: tuple[NodeSelectorTerm, ...]
) -> BOOL:
    n = snap.n
    mask: BOOL = np.ones(n, dtype=np.bool_)
    for k, v in sorted(node_selector.items()):
        mask &= requirement_mask(snap, Requirement(k, "In", (v,)))
    if terms:
        anyterm: BOOL = np.zeros(n, dtype=np.bool_)
        for t in terms:
            anyterm |= term_mask(snap, t)
        mask &= anyterm
    return mask


def filter_nodes(
    node_selector: Mapping[str, str], terms: tuple[NodeSelectorTerm, ...], snap: Snapshot
) -> FilterResult:
    snap.refresh()
    if not node_selector and not terms:
        return FilterResult(NAME, snap.all_nodes, [], Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
    ok = selector_mask(snap, node_selector, terms)
    return FilterResult(NAME, ok, [(ERR_REASON_POD, ~ok)], Code.UNSCHEDULABLE_AND_UNRESOLVABLE)


def score_raw(preferred: tuple[PreferredTerm, ...], snap: Snapshot) -> npt.NDArray[np.int64] | None:
    if not preferred:
        return None
    out: npt.NDArray[np.int64] = np.zeros(snap.n, dtype=np.int64)
    for p in preferred:
        if p.weight == 0:
            continue
        out += term_mask(snap, p.term).astype(np.int64) * p.weight
    if len(out) == 0 or out.min() == out.max():
        return None
    return out


# ----------------------------------------------------------------- node-by-node (reference)
def node_matches(
    labels: Mapping[str, str], node_selector: Mapping[str, str], terms: tuple[NodeSelectorTerm, ...]
) -> bool:
    for k, v in node_selector.items():
        if labels.get(k) != v:
            return False
    if terms and not any(t.matches(labels) for t in terms):
        return False
    return True


class NodeAffinity:
    """Filter and Score plugin (preferred terms' weights of the matching node)."""

    name = NAME
    default_weight = 2
    reverse = False

    def filter(self, sig: FilterSignature, snap: Snapshot) -> FilterResult:
        return filter_nodes(dict(sig.node_selector), sig.required, snap)

    def score_raw(self, sig: FilterSignature, snap: Snapshot) -> npt.NDArray[np.int64] | None:
        return score_raw(sig.preferred, snap)
