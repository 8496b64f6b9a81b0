"""What the scheduler saw when a group did not fit (issue 31): its per-node exclusions, recorded
with the ``PodGroupUnschedulable`` decision as ``exclusions``, compressed.

The shape follows the machine-readable diagnosis proposed upstream (kubernetes-sigs/
scheduler-library PR #16: per node the plugin, the stage in PreFilter/Filter/..., the reason),
compressed: counts per domain, plugin, stage and reason, a bounded list of representative
nodes, and per candidate domain how many of the group's pending pods fit. Stages are the PR's
``RejectionStage`` values: ``Filter`` for a filter plugin's rejection, ``PreFilterNarrowing``
for nodes the topology placement left out (the PR's record has no reason; this one keeps the
plugin's reason, upstream's words).

Pure and deterministic: it reads the nodes and pods the scheduler holds right after the failed
attempt was rolled back (the state ``explain --nodes`` recomputes for events written before this
record existed: the snapshot plus the earlier decisions of the same run). Per candidate domain
(the diagnosis's ranked domains, at most ``why.MAX_DOMAINS``; the whole cluster without a
topology key) the pending pods are placed one after another, each on the first node of the
domain (snapshot order) whose filters accept it, against the bound pods plus the gang pods
placed before it; the first pod no node of the domain accepts ends the domain (upstream's
``N scheduled, M remaining``: the pods after it are not tried), and each node of the domain
records why it rejected that pod. Nodes outside the candidate domains are counted, not
evaluated: without the topology label, outside the domain of the group's bound members, or in a
farther domain than the listed ones.

``record = {nodes, pods, domains, counts, sample}``:

* ``domains``: ``[domain, nodes, fit, tried]`` per evaluated domain, in the diagnosis's order
  (``fit``: pods placed; ``tried``: pods evaluated, ``fit`` plus the one that fitted nowhere);
* ``counts``: ``[domain, plugin, stage, reason, nodes]``: how many nodes of the domain excluded
  the domain's failing pod for that reason (a node with two reasons counts under both);
  ``domain`` ``(other)`` for the nodes that were not evaluated;
* ``sample``: at most ``MAX_SAMPLE`` ``[node, plugin, stage, reason]``: the first node of each
  (domain, plugin, reason) of the closest domains, in order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from scheduler.cycle.why import why_rejections
from scheduler.model import PODS, Pod
from scheduler.reference import RefNode, filter_node_all, inter_pod_filter, spread_filter
from scheduler.snapshot import Snapshot, make_demand

MAX_SAMPLE = 8
# stages as in scheduler-library PR #16 (RejectionStage): a placement narrows the node set
FILTER, NARROWING = "Filter", "PreFilterNarrowing"
TOPOLOGY = "TopologyPlacement"  # podledger's name for the placement generation step
OTHER = "(other)"


def _copy(rn: RefNode) -> RefNode:
    return RefNode(rn.node, dict(rn.requested), rn.pod_count, rn.nz_cpu, rn.nz_mem)


def _needs_placed(snap: Snapshot, gang: Sequence[Pod]) -> bool:
    """Whether a pod-aware filter could reject a gang pod: its ports, spread constraints or pod
    (anti-)affinity, or scheduled pods with pod (anti-)affinity terms."""
    if snap.n_anti_required or snap.n_pod_affinity:
        return True
    return any(p.inter_pod for p in gang)


def _first_fit(snap: Snapshot, pod: Pod, idx: Sequence[int], free: npt.NDArray[np.int64]) -> int | None:
    """The first node of ``idx`` (an index into it) whose static filters let ``pod`` on and whose
    free amounts (``free``: the domain's columns, updated here) hold it: what ``filter_node``
    over the nodes in order finds first, without a Python call per node; None: no node."""
    static = why_rejections(snap, pod)
    ok = np.fromiter((static[j] is None for j in idx), dtype=np.bool_, count=len(idx))
    need = np.zeros(free.shape[0], dtype=np.int64)
    for r, amt in pod.requests.items():
        if r == PODS or int(amt) <= 0:
            continue
        i = snap.res_index.get(r)
        if i is None:
            return None  # no node has the resource
        need[i] = int(amt)
    if PODS in snap.res_index:
        need[snap.res_index[PODS]] = 1
    rows = np.nonzero(need)[0]
    if len(rows):
        ok &= np.all(free[rows] >= need[rows, None], axis=0)
    if not ok.any():
        return None
    k = int(np.argmax(ok))
    free[rows, k] -= need[rows]
    return k


def _ref_nodes(snap: Snapshot) -> list[RefNode]:
    """The nodes with what their scheduled pods request, from the snapshot's columns (the same
    amounts ``RefNode.add`` sums pod by pod, without a pass over every pod)."""
    snap.refresh()
    res = [(r, i) for r, i in snap.res_index.items() if r != PODS]
    alloc, free = snap.alloc.tolist(), snap.free.tolist()
    pods_i = snap.res_index.get(PODS)
    out: list[RefNode] = []
    for j, nd in enumerate(snap.nodes):
        used = {r: alloc[i][j] - free[i][j] for r, i in res if alloc[i][j] - free[i][j]}
        count = (
            alloc[pods_i][j] - free[pods_i][j] if pods_i is not None else len(snap.node_pods.get(nd.name, ()))
        )
        out.append(RefNode(nd, used, count))
    return out


def evaluate_domains(
    snap: Snapshot,
    pods: Mapping[str, Pod],
    pending: Sequence[str],
    *,
    topology_key: str | None,
    domains: Sequence[str],
    pinned: bool = False,
) -> dict[str, Any]:
    """Per domain of ``domains`` (the whole cluster without a ``topology_key``), the pending pods
    ``pending`` (keys, in the order the group tries them) placed one after another on the
    snapshot ``snap`` (the pods by key: ``pods``): ``{nodes, pods, rows, counts, firsts}``, in
    no particular order (``compress`` orders it)."""
    refs = _ref_nodes(snap)
    by_name = {r.node.name: r for r in refs}
    placed: list[tuple[Pod, str]] = []
    gang = [p for k in pending if (p := pods.get(k)) is not None and not p.node_name]
    aware = _needs_placed(snap, gang)
    if aware:  # pod-aware filters read the scheduled pods
        placed = [(p, p.node_name) for p in pods.values() if p.node_name and p.node_name in by_name]
    order = list(domains) if topology_key else ["(cluster)"]
    members: dict[str, list[int]] = {d: [] for d in order}
    counts: dict[tuple[str, str, str, str], int] = {}
    for j, rn in enumerate(refs):
        dom = rn.node.labels.get(topology_key) if topology_key else "(cluster)"
        if dom in members:
            members[dom].append(j)
            continue
        if dom is None:
            why = (TOPOLOGY, NARROWING, f"node(s) without the {topology_key} label")
        elif pinned:
            why = (TOPOLOGY, NARROWING, "node(s) outside the domain of the group's bound members")
        else:
            why = (TOPOLOGY, NARROWING, "node(s) in a farther domain (not evaluated)")
        counts[(OTHER, *why)] = counts.get((OTHER, *why), 0) + 1
    rows: dict[str, list[Any]] = {}
    firsts: dict[str, list[list[str]]] = {}  # per domain, the first node of each (plugin, reason)
    for dom in order:
        idx = members[dom]
        local = [_copy(refs[j]) for j in idx]
        local_placed = list(placed)
        fit, failed = 0, False
        firsts[dom] = []
        free = snap.free[:, idx].copy() if not aware else None
        for pod in gang:
            demand = make_demand(pod.requests)
            if free is not None:  # no pod-aware filter can reject: first fit on the columns
                first = _first_fit(snap, pod, idx, free)
                if first is not None:
                    local[first].add(demand)
                    fit += 1
                    continue
            spread = (
                spread_filter(pod, local, local_placed) if pod.spread_constraints else [None] * len(local)
            )
            inter = inter_pod_filter(pod, local, local_placed) if aware else [None] * len(local)
            chosen: RefNode | None = None
            rejects: list[tuple[str, str, str]] = []  # (node, plugin, reason)
            for i, rn in enumerate(local):
                res = filter_node_all(pod, demand, rn, local_placed, spread[i], inter[i])
                if res is None:
                    chosen = rn
                    break
                rejects.extend((rn.node.name, res[0], r) for r in res[1])
            if chosen is not None:
                chosen.add(demand)
                local_placed.append((pod, chosen.node.name))
                fit += 1
                continue
            failed = True
            seen: set[tuple[str, str]] = set()
            for node, plugin, reason in rejects:
                ck = (dom, plugin, FILTER, reason)
                counts[ck] = counts.get(ck, 0) + 1
                if (plugin, reason) not in seen:
                    seen.add((plugin, reason))
                    firsts[dom].append([node, plugin, FILTER, reason])
            break
        rows[dom] = [dom, len(idx), fit, fit + int(failed)]
    return {"nodes": len(refs), "pods": len(gang), "rows": rows, "counts": counts, "firsts": firsts}


def compress(raw: Mapping[str, Any], order: Sequence[str]) -> dict[str, Any]:
    """The record (see the module docstring) of ``evaluate_domains``'s result, its domains in
    ``order`` (closest first: the diagnosis's final order)."""
    rank = {d: i for i, d in enumerate(order)}
    counts: dict[tuple[str, str, str, str], int] = raw["counts"]
    ordered = sorted(counts.items(), key=lambda kv: (rank.get(kv[0][0], len(rank)), -kv[1], kv[0]))
    sample = [s for d in order for s in raw["firsts"].get(d, ())][:MAX_SAMPLE]
    return {
        "nodes": raw["nodes"],
        "pods": raw["pods"],
        "domains": [raw["rows"][d] for d in order if d in raw["rows"]],
        "counts": [[*k, n] for k, n in ordered],
        "sample": sample,
    }


def record_exclusions(
    snap: Snapshot,
    pods: Mapping[str, Pod],
    pending: Sequence[str],
    *,
    topology_key: str | None,
    domains: Sequence[str],
    pinned: bool = False,
) -> dict[str, Any]:
    """The compressed per-node exclusions of the pending pods ``pending`` (keys, in the order the
    group tries them) over ``domains`` (closest first; the whole cluster without a
    ``topology_key``), on the snapshot ``snap`` and the pods by key ``pods``."""
    raw = evaluate_domains(snap, pods, pending, topology_key=topology_key, domains=domains, pinned=pinned)
    return compress(raw, list(domains) if topology_key else ["(cluster)"])


__all__ = ["MAX_SAMPLE", "compress", "evaluate_domains", "record_exclusions"]
