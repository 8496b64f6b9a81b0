"""Label selectors over pods and an incremental index of the scheduled pods (pod-aware plugins).

``PodIndex`` follows the snapshot's pod log (``Snapshot.pod_log``): every assigned or assumed
pod, by label pair, with its node; the host ports in use per ``(protocol, port)``; and the
pods carrying (anti-)affinity terms, each term anchored on one label pair its selector requires
(a term can only match pods with that pair) so that finding the terms that match a pod costs
O(the pod's labels + the candidates), not O(scheduled pods). Node *names* are stored (indices
change when the node set changes); a new snapshot epoch rebuilds the index from the snapshot.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import numpy.typing as npt

from scheduler.model import HostPort, LabelSelector, Pod, PodAffinityTerm
from scheduler.snapshot import Snapshot

I64 = npt.NDArray[np.int64]
BOOL = npt.NDArray[np.bool_]

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

# term kinds of scheduled pods
ANTI_REQ, AFF_REQ, AFF_PREF, ANTI_PREF = "anti_req", "aff_req", "aff_pref", "anti_pref"

Anchor = tuple[str, str] | None


def selector_matches(sel: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelectorAsSelector(sel).Matches(labels); None matches nothing."""
    return sel is not None and sel.matches(labels)


def namespace_labels(ns: str) -> dict[str, str]:
    """The labels podledger knows of a namespace: the automatic ``kubernetes.io/metadata.name``."""
    return {NAMESPACE_NAME_LABEL: ns}


def term_namespace_ok(term: PodAffinityTerm, owner_ns: str, ns: str) -> bool:
    """Does ``term`` (carried by a pod of ``owner_ns``) consider pods of namespace ``ns``?"""
    if not term.namespaces and term.namespace_selector is None:
        return ns == owner_ns
    if ns in term.namespaces:
        return True
    sel = term.namespace_selector
    if sel is None:
        return False
    return sel.empty or selector_matches(sel, namespace_labels(ns))


def term_matches(term: PodAffinityTerm, owner_ns: str, pod: Pod) -> bool:
    """AffinityTerm.Matches: namespace and label selector."""
    return term_namespace_ok(term, owner_ns, pod.namespace) and selector_matches(term.selector, pod.labels)


def anchor_of(sel: LabelSelector | None) -> Anchor:
    """A label pair every pod matching ``sel`` carries (None: no such pair is implied)."""
    if sel is None:
        return None
    if sel.match_labels:
        return sel.match_labels[0]
    for r in sel.match_expressions:
        if r.operator == "In" and len(r.values) == 1:
            return (r.key, r.values[0])
    return None


def ports_conflict(a: HostPort, b: HostPort) -> bool:
    """HostPortInfo.CheckConflict for one pair (0.0.0.0 conflicts with every IP)."""
    if a.port != b.port or a.protocol != b.protocol:
        return False
    return a.host_ip == b.host_ip or a.host_ip == "0.0.0.0" or b.host_ip == "0.0.0.0"


class PodIndex:
    __slots__ = (
        "epoch",
        "pos",
        "node_of",
        "pod_of",
        "by_label",
        "ports",
        "terms",
        "n_terms",
        "version",
        "memo",
    )

    def __init__(self) -> None:
        self.epoch = -1
        self.pos = 0
        self.node_of: dict[str, str] = {}
        self.pod_of: dict[str, Pod] = {}
        self.by_label: dict[tuple[str, str], set[str]] = {}
        self.ports: dict[tuple[str, int], dict[str, list[str]]] = {}  # (proto, port) -> node -> ips
        # kind -> anchor -> pod key -> terms (with weights; required terms weight 0)
        self.terms: dict[str, dict[Anchor, dict[str, list[tuple[int, PodAffinityTerm]]]]] = {
            k: {} for k in (ANTI_REQ, AFF_REQ, AFF_PREF, ANTI_PREF)
        }
        self.n_terms: dict[str, int] = dict.fromkeys((ANTI_REQ, AFF_REQ, AFF_PREF, ANTI_PREF), 0)
        self.version = 0  # bumped by every change; ``memo`` holds query results of one version
        self.memo: dict[object, object] = {}

    # ------------------------------------------------------------ upkeep
    def sync(self, snap: Snapshot) -> PodIndex:
        if self.epoch != snap.epoch:
            self.__init__()  # type: ignore[misc]
            self.epoch = snap.epoch
            for key, obj in snap.objs.items():
                node = snap.pod_node(key)
                if node is not None:
                    self._add(node, obj)
            self.pos = len(snap.pod_log)
            return self
        log = snap.pod_log
        if self.pos < len(log):
            for sign, node, obj in log[self.pos :]:
                if sign > 0:
                    self._add(node, obj)
                else:
                    self._remove(obj)
            self.pos = len(log)
        return self

    def _add(self, node: str, pod: Pod) -> None:
        key = pod.key
        if key in self.node_of:
            self._remove(self.pod_of[key])
        self.version += 1
        for entry in self.memo.values():
            entry.update(1, node, pod)  # type: ignore[attr-defined]
        if key in self.node_of:
            self._remove(self.pod_of[key])
        self.node_of[key] = node
        self.pod_of[key] = pod
        for kv in pod.labels.items():
            self.by_label.setdefault(kv, set()).add(key)
        for hp in pod.host_ports:
            self.ports.setdefault((hp.protocol, hp.port), {}).setdefault(node, []).append(hp.host_ip)
        if pod.has_pod_affinity:
            for kind, items in self._term_items(pod):
                per = self.terms[kind]
                for w, t in items:
                    per.setdefault(anchor_of(t.selector), {}).setdefault(key, []).append((w, t))
                    self.n_terms[kind] += 1

    def _remove(self, pod: Pod) -> None:
        key = pod.key
        node = self.node_of.pop(key, None)
        if node is None:
            return
        self.version += 1
        for entry in self.memo.values():
            entry.update(-1, node, self.pod_of[key])  # type: ignore[attr-defined]
        old = self.pod_of.pop(key)
        for kv in old.labels.items():
            s = self.by_label.get(kv)
            if s is not None:
                s.discard(key)
                if not s:
                    del self.by_label[kv]
        for hp in old.host_ports:
            per = self.ports.get((hp.protocol, hp.port))
            if per is not None and node in per:
                per[node].remove(hp.host_ip)
                if not per[node]:
                    del per[node]
                if not per:
                    del self.ports[(hp.protocol, hp.port)]
        if old.has_pod_affinity:
            for kind, items in self._term_items(old):
                per2 = self.terms[kind]
                for _, t in items:
                    a = anchor_of(t.selector)
                    d = per2.get(a)
                    if d is not None and d.pop(key, None) is not None and not d:
                        del per2[a]
                self.n_terms[kind] -= len(items)

    @staticmethod
    def _term_items(pod: Pod) -> list[tuple[str, list[tuple[int, PodAffinityTerm]]]]:
        out = []
        if pod.anti_affinity_required:
            out.append((ANTI_REQ, [(0, t) for t in pod.anti_affinity_required]))
        if pod.affinity_required:
            out.append((AFF_REQ, [(0, t) for t in pod.affinity_required]))
        if pod.affinity_preferred:
            out.append((AFF_PREF, [(w.weight, w.term) for w in pod.affinity_preferred]))
        if pod.anti_affinity_preferred:
            out.append((ANTI_PREF, [(w.weight, w.term) for w in pod.anti_affinity_preferred]))
        return out

    # ------------------------------------------------------------ queries
    def candidates(self, sel: LabelSelector | None) -> Iterable[str]:
        """Keys of scheduled pods that may match ``sel`` (a superset; sorted)."""
        if sel is None:
            return ()
        a = anchor_of(sel)
        if a is None:
            return sorted(self.node_of)
        return sorted(self.by_label.get(a, ()))

    def matching(
        self, sel: LabelSelector | None, ok_ns: object, memo_key: object = None
    ) -> list[tuple[str, Pod]]:
        """(node, pod) of the scheduled pods matching ``sel`` whose namespace passes ``ok_ns``
        (remembered under ``memo_key``, when given, until the index changes)."""
        if memo_key is not None:
            hit = self.memo.get(("m", memo_key))
            if isinstance(hit, _Matches):
                return list(hit.found.values())
        out = []
        for k in self.candidates(sel):
            p = self.pod_of[k]
            if ok_ns(p.namespace) and selector_matches(sel, p.labels):  # type: ignore[operator]
                out.append((self.node_of[k], p))
        if memo_key is not None:
            self._remember(("m", memo_key), _Matches(sel, ok_ns, {p.key: (nd, p) for nd, p in out}))
        return out

    def counts(self, snap: Snapshot, sel: LabelSelector | None, ns: str) -> I64:
        """Per node index: scheduled pods of namespace ``ns`` matching ``sel`` (kept up to date
        incrementally once asked for)."""
        key = ("c", sel, ns, snap.generation)
        hit = self.memo.get(key)
        if not isinstance(hit, _Counts):
            arr = self.node_counts(snap, (nd for nd, _ in self.matching(sel, lambda x: x == ns)))
            hit = _Counts(sel, ns, snap.index, arr)
            self._remember(key, hit)
        return hit.arr

    def _remember(self, key: object, entry: object) -> None:
        if len(self.memo) >= MEMO_SIZE:
            self.memo.clear()
        self.memo[key] = entry

    def terms_matching(self, kind: str, pod: Pod) -> list[tuple[str, Pod, int, PodAffinityTerm]]:
        """(node, owner, weight, term) of scheduled pods' ``kind`` terms that match ``pod``."""
        if not self.n_terms[kind]:
            return []
        per = self.terms[kind]
        buckets = [per.get(kv) for kv in sorted(pod.labels.items())]
        buckets.append(per.get(None))
        out = []
        for b in buckets:
            if not b:
                continue
            for k in sorted(b):
                owner = self.pod_of[k]
                for w, t in b[k]:
                    if term_matches(t, owner.namespace, pod):
                        out.append((self.node_of[k], owner, w, t))
        return out

    def node_counts(self, snap: Snapshot, nodes: Iterable[str]) -> I64:
        """Per node index: how many entries of ``nodes`` (names, repeats count) are on it."""
        out: I64 = np.zeros(snap.n, dtype=np.int64)
        idx = snap.index
        for nm in nodes:
            i = idx.get(nm)
            if i is not None:
                out[i] += 1
        return out


MEMO_SIZE = 32


class _Matches:
    """A memoized ``matching`` result, updated as pods come and go."""

    __slots__ = ("sel", "ok_ns", "found")

    def __init__(self, sel: LabelSelector | None, ok_ns: object, found: dict[str, tuple[str, Pod]]) -> None:
        self.sel, self.ok_ns, self.found = sel, ok_ns, found

    def update(self, sign: int, node: str, pod: Pod) -> None:
        if sign < 0:
            self.found.pop(pod.key, None)
        elif self.ok_ns(pod.namespace) and selector_matches(self.sel, pod.labels):  # type: ignore[operator]
            self.found[pod.key] = (node, pod)


class _Counts:
    """Memoized per-node counts of the pods of one namespace matching one selector."""

    __slots__ = ("sel", "ns", "index", "arr")

    def __init__(self, sel: LabelSelector | None, ns: str, index: dict[str, int], arr: I64) -> None:
        self.sel, self.ns, self.index, self.arr = sel, ns, index, arr

    def update(self, sign: int, node: str, pod: Pod) -> None:
        if pod.namespace != self.ns or not selector_matches(self.sel, pod.labels):
            return
        i = self.index.get(node)
        if i is not None:
            self.arr[i] += sign


def index_of(snap: Snapshot) -> PodIndex:
    """The snapshot's PodIndex, brought up to date."""
    ix = snap.caches.pod_index
    if ix is None:
        ix = snap.caches.pod_index = PodIndex()
    return ix.sync(snap)


def label_mask(snap: Snapshot, key: str) -> BOOL:
    out: BOOL = snap.label(key).ids >= 0
    return out
