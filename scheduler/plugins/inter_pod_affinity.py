"""InterPodAffinity: required/preferred pod affinity and anti-affinity, and the scheduled pods'
required anti-affinity against the incoming pod.

Filter (kube-scheduler), per node, the first that fails:
``node(s) didn't match pod affinity rules`` (UnschedulableAndUnresolvable): every required
affinity term needs the node's topology label and, in that domain, a scheduled pod matching all
the terms; when no scheduled pod matches them anywhere and the pod matches its own terms, the
first pod of such a series may go to any node carrying the labels;
``node(s) didn't match pod anti-affinity rules`` (Unschedulable): a required anti-affinity term
with a matching scheduled pod in the node's domain;
``node(s) didn't satisfy existing pods anti-affinity rules`` (Unschedulable): a scheduled pod
whose required anti-affinity term matches the incoming pod, in the node's domain.
A term considers the namespaces of ``namespaces`` plus those its ``namespaceSelector`` matches
(empty selector: all; namespaces carry only ``kubernetes.io/metadata.name``), else the
namespace of its pod. Scheduled = assigned + assumed, so a PodGroup's pods see each other.

Score: per topology pair the weights of the incoming pod's preferred terms matching scheduled
pods (anti-affinity negative), plus the scheduled pods' preferred terms matching the incoming
pod and their required affinity terms (hardPodAffinityWeight 1); a node sums the pairs of its
labels; normalized ``int(100 * (s - min) / (max - min))`` over the feasible nodes (0 when all
equal). Default weight 2.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import numpy.typing as npt

from scheduler.framework import Code, FilterResult
from scheduler.messages import ERR_EXISTING_ANTI_AFFINITY
from scheduler.messages import ERR_POD_AFFINITY as ERR_AFFINITY
from scheduler.messages import ERR_POD_ANTI_AFFINITY as ERR_ANTI_AFFINITY
from scheduler.model import Pod, PodAffinityTerm, SchedulerConfig
from scheduler.plugins.pod_index import (
    AFF_PREF,
    AFF_REQ,
    ANTI_PREF,
    ANTI_REQ,
    PodIndex,
    index_of,
    term_matches,
    term_namespace_ok,
)
from scheduler.snapshot import Snapshot

NAME = "InterPodAffinity"
HARD_POD_AFFINITY_WEIGHT = 1
MAX_NODE_SCORE = 100

BOOL = npt.NDArray[np.bool_]
I64 = npt.NDArray[np.int64]


def ns_filter(term: PodAffinityTerm, owner_ns: str) -> Callable[[str], bool]:
    return lambda ns: term_namespace_ok(term, owner_ns, ns)


def term_pods(ix: PodIndex, term: PodAffinityTerm, owner_ns: str) -> list[tuple[str, Pod]]:
    """(node, pod) of the scheduled pods ``term`` (of a pod in ``owner_ns``) matches."""
    return ix.matching(
        term.selector,
        ns_filter(term, owner_ns),
        (term.selector, term.namespaces, term.namespace_selector, owner_ns),
    )


def _value_mask(snap: Snapshot, key: str, values: Iterable[str]) -> BOOL:
    """Nodes whose ``key`` label is one of ``values``."""
    col = snap.label(key)
    lut = np.zeros(len(col.values) + 1, dtype=np.bool_)
    for v in values:
        vid = col.value_of.get(v)
        if vid is not None:
            lut[vid + 1] = True
    out: BOOL = lut[col.ids + 1]
    return out


def _values_at(snap: Snapshot, key: str, nodes: Iterable[str]) -> set[str]:
    out = set()
    for nm in nodes:
        nd = snap.node(nm)
        if nd is not None and nm in snap.index:
            v = nd.labels.get(key)
            if v is not None:
                out.add(v)
    return out


def affinity_mask(pod: Pod, snap: Snapshot, ix: PodIndex) -> BOOL:
    terms = pod.affinity_required
    n = snap.n
    ok: BOOL = np.ones(n, dtype=np.bool_)
    if not terms:
        return ok
    first = terms[0]
    nodes = [
        node
        for node, p in term_pods(ix, first, pod.namespace)
        if all(term_matches(t, pod.namespace, p) for t in terms[1:])
    ]
    has_keys: BOOL = np.ones(n, dtype=np.bool_)
    exist: BOOL = np.ones(n, dtype=np.bool_)
    empty = True
    for t in terms:
        has_keys &= snap.label(t.topology_key).ids >= 0
        vals = _values_at(snap, t.topology_key, nodes)
        if vals:
            empty = False
        exist &= _value_mask(snap, t.topology_key, vals)
    if empty and all(term_matches(t, pod.namespace, pod) for t in terms):
        return has_keys
    out: BOOL = has_keys & exist
    return out


def anti_affinity_bad(pod: Pod, snap: Snapshot, ix: PodIndex) -> BOOL:
    bad: BOOL = np.zeros(snap.n, dtype=np.bool_)
    for t in pod.anti_affinity_required:
        nodes = [node for node, _ in term_pods(ix, t, pod.namespace)]
        vals = _values_at(snap, t.topology_key, nodes)
        if vals:
            bad |= _value_mask(snap, t.topology_key, vals)
    return bad


def existing_anti_bad(pod: Pod, snap: Snapshot, ix: PodIndex) -> BOOL:
    bad: BOOL = np.zeros(snap.n, dtype=np.bool_)
    per_key: dict[str, set[str]] = {}
    for node, _, _, t in ix.terms_matching(ANTI_REQ, pod):
        per_key.setdefault(t.topology_key, set()).update(_values_at(snap, t.topology_key, (node,)))
    for key in sorted(per_key):
        if per_key[key]:
            bad |= _value_mask(snap, key, per_key[key])
    return bad


def filter_pod(pod: Pod, snap: Snapshot) -> FilterResult:
    ix = index_of(snap)
    aff_bad = ~affinity_mask(pod, snap, ix)
    anti_bad = anti_affinity_bad(pod, snap, ix) & ~aff_bad
    exist_bad = existing_anti_bad(pod, snap, ix) & ~aff_bad & ~anti_bad
    reasons = [
        (r, m)
        for r, m in (
            (ERR_AFFINITY, aff_bad),
            (ERR_ANTI_AFFINITY, anti_bad),
            (ERR_EXISTING_ANTI_AFFINITY, exist_bad),
        )
        if m.any()
    ]
    ok = ~(aff_bad | anti_bad | exist_bad)
    return FilterResult(NAME, ok, reasons, Code.UNSCHEDULABLE, unresolvable=aff_bad)


# ------------------------------------------------------------------ score
def pair_scores(pod: Pod, snap: Snapshot, ix: PodIndex) -> dict[tuple[str, str], int]:
    """Topology pair -> summed weight (upstream's scoreMap)."""
    out: dict[tuple[str, str], int] = {}

    def add(key: str, node: str, w: int) -> None:
        nd = snap.node(node)
        if nd is None or node not in snap.index or not w:
            return
        v = nd.labels.get(key)
        if v is not None:
            out[(key, v)] = out.get((key, v), 0) + w

    for sign, wterms in ((1, pod.affinity_preferred), (-1, pod.anti_affinity_preferred)):
        for wt in wterms:
            for node, _ in term_pods(ix, wt.term, pod.namespace):
                add(wt.term.topology_key, node, sign * wt.weight)
    for node, _, _, t in ix.terms_matching(AFF_REQ, pod):
        add(t.topology_key, node, HARD_POD_AFFINITY_WEIGHT)
    for node, _, w, t in ix.terms_matching(AFF_PREF, pod):
        add(t.topology_key, node, w)
    for node, _, w, t in ix.terms_matching(ANTI_PREF, pod):
        add(t.topology_key, node, -w)
    return out


def normalize(raw: I64) -> I64:
    if len(raw) == 0:
        return raw
    lo, hi = int(raw.min()), int(raw.max())
    diff = hi - lo
    if diff <= 0:
        return np.zeros(len(raw), dtype=np.int64)
    out: I64 = (float(MAX_NODE_SCORE) * ((raw - lo).astype(np.float64) / float(diff))).astype(np.int64)
    return out


def score_raw(pod: Pod, snap: Snapshot, idx: npt.NDArray[np.intp]) -> I64:
    pairs = pair_scores(pod, snap, index_of(snap))
    raw: I64 = np.zeros(len(idx), dtype=np.int64)
    per_key: dict[str, list[tuple[str, int]]] = {}
    for (key, v), w in sorted(pairs.items()):
        per_key.setdefault(key, []).append((v, w))
    for key, items in per_key.items():
        col = snap.label(key)
        lut = np.zeros(len(col.values) + 1, dtype=np.int64)
        for v, w in items:
            vid = col.value_of.get(v)
            if vid is not None:
                lut[vid + 1] += w
        raw += lut[col.ids[idx] + 1]
    return raw


class InterPodAffinity:
    name = NAME
    before_fit = False
    default_weight = 2

    def active(self, pod: Pod, snap: Snapshot) -> bool:
        if pod.affinity_required or pod.anti_affinity_required:
            return True
        return snap.n_anti_required > 0 and index_of(snap).n_terms[ANTI_REQ] > 0

    def score_active(self, pod: Pod, snap: Snapshot, config: SchedulerConfig) -> bool:
        if pod.affinity_preferred or pod.anti_affinity_preferred:
            return True
        if snap.n_pod_affinity <= 0:
            return False
        ix = index_of(snap)
        return any(ix.n_terms[k] for k in (AFF_REQ, AFF_PREF, ANTI_PREF))

    def filter_pod(self, pod: Pod, snap: Snapshot) -> FilterResult:
        return filter_pod(pod, snap)

    def score_pod(
        self, pod: Pod, snap: Snapshot, idx: npt.NDArray[np.intp], config: SchedulerConfig
    ) -> I64 | None:
        return normalize(score_raw(pod, snap, idx))
