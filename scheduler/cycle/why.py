"""The structured "why" of an unschedulable PodGroup (issue 21): what the gang needs, how many of
its pods each candidate topology domain has room for and what binds it, the best domain first,
and what would unblock it.

Pure: it reads the snapshot (free resources per node, after the failed attempt was rolled back)
and the node objects, and is recorded in the ``PodGroupUnschedulable`` payload as ``why``:

* ``need``: ``{pods, request, topologyKey}``: the pods still needed for the gang's quorum
  (minCount minus bound members, at least 1, at most the pending ones) and the per-pod request
  of the first pending pod (what the count below assumes for every pod);
* ``domains``: per candidate domain (a value of the topology key; the whole cluster without one)
  ``{domain, nodes, fit, free, binding}``: the pods the domain has room for (per node, the whole
  pods its free resources hold, over the nodes that the node filters let the pod onto), the free
  amount of each requested resource on those nodes (``free``) and the
  constraint that binds it: a resource (``resource:<name>``), a node filter
  (``filter:<plugin>``, when no node of the domain lets the pod on) or ``none`` when there is
  room; sorted by room (most first), then name; at most ``MAX_DOMAINS`` listed, ``more`` counts
  the others;
* ``unblock``: one line: free N more of a resource in the best domain, a quota change, or the
  preemption that was tried and why it found no victims.

Pod-aware filters (ports, inter-pod affinity, spread) are not counted per domain; the reason
codes name them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.framework import signature_of
from scheduler.model import PODS, Pod
from scheduler.reference import RefNode, filter_node
from scheduler.snapshot import Snapshot, make_demand
from scheduler.units import show_amount

MAX_DOMAINS = 6
CLUSTER = "(cluster)"
_FREE_ANY = make_demand({})


def _rejections(snap: Snapshot, pod: Pod) -> list[str | None]:
    """Per node, the first node filter that rejects ``pod`` whatever the node's load (None: it
    lets the pod on). It reads the nodes and the pod's filter signature only: kept per
    signature until the node set changes (``NodeSetCaches.why_rejections``)."""
    cache = snap.caches.why_rejections
    sig = signature_of(pod)
    hit = cache.get(sig)
    if hit is not None:
        return hit
    out: list[str | None] = []
    for nd in snap.nodes:
        rej = filter_node(pod, _FREE_ANY, RefNode(nd))
        out.append(rej[0] if rej is not None else None)
    cache[sig] = out
    return out


def group_why(
    snap: Snapshot,
    pending: Sequence[Pod],
    *,
    min_count: int,
    bound: int,
    topology_key: str | None,
    codes: Sequence[str],
    message: str,
) -> dict[str, Any]:
    """The structured diagnosis (see the module docstring); ``{}`` without pending pods."""
    if not pending:
        return {}
    pod = pending[0]
    requests = {r: int(v) for r, v in sorted(pod.requests.items()) if int(v) > 0 and r != PODS}
    needed = max(1, min(len(pending), min_count - bound))
    snap.refresh()
    rejected = _rejections(snap, pod)
    n = len(snap.nodes)
    # per node, as Python ints: the free amount of each requested resource (at least 0), the
    # pods it has room for by that resource, and by all of them and the pod slots together
    free_of = {
        r: [max(f, 0) for f in snap.free[snap.res_index[r]].tolist()] if r in snap.res_index else [0] * n
        for r in requests
    }
    cap_of = {r: [f // amt for f in free_of[r]] for r, amt in requests.items()}
    room = snap.free[snap.res_index[PODS]].tolist() if PODS in snap.res_index else [needed] * n
    for caps in cap_of.values():
        room = list(map(min, room, caps))
    nodes_of: dict[str, list[int]] = {}  # candidate domain -> its nodes (domains by first node)
    for j, nd in enumerate(snap.nodes):
        dom = CLUSTER if not topology_key else nd.labels.get(topology_key)
        if dom is not None:
            nodes_of.setdefault(dom, []).append(j)
    out: list[dict[str, Any]] = []
    for dom, nodes in nodes_of.items():
        filters: dict[str, int] = {}
        admitted: list[int] = []  # the nodes the node filters let the pod onto
        for j in nodes:
            rej = rejected[j]
            if rej is None:
                admitted.append(j)
            else:
                filters[rej] = filters.get(rej, 0) + 1
        cap = {r: sum(caps[j] for j in admitted) for r, caps in cap_of.items()} if admitted else {}
        d: dict[str, Any] = {
            "domain": dom,
            "nodes": len(nodes),
            "fit": min(sum(max(room[j], 0) for j in admitted), needed),
            "free": {r: show_amount(r, sum(free[j] for j in admitted)) for r, free in free_of.items()},
        }
        if d["fit"] >= needed:
            d["binding"] = "none"
        elif filters and sum(filters.values()) == d["nodes"]:
            d["binding"] = "filter:" + max(sorted(filters), key=lambda p: filters[p])
        elif cap:
            d["binding"] = "resource:" + min(sorted(cap), key=lambda r: cap[r])
        else:
            d["binding"] = "resource:pods"
        if filters:
            d["excluded"] = dict(sorted(filters.items()))
        out.append(d)
    out.sort(key=lambda d: (-d["fit"], d["domain"]))
    why: dict[str, Any] = {
        "need": {
            "pods": needed,
            "request": {r: show_amount(r, a) for r, a in requests.items()},
            "topologyKey": topology_key,
        },
        "domains": out[:MAX_DOMAINS],
    }
    if len(out) > MAX_DOMAINS:
        why["more"] = len(out) - MAX_DOMAINS
    why["unblock"] = _unblock(out[0] if out else None, needed, requests, topology_key, codes, message)
    return why


def _unblock(
    best: Mapping[str, Any] | None,
    needed: int,
    requests: Mapping[str, int],
    key: str | None,
    codes: Sequence[str],
    message: str,
) -> str:
    where = "the cluster" if not key or best is None else f"{key}={best['domain']}"
    parts: list[str] = []
    if any(c.startswith("Quota") for c in codes):
        q = next(
            (s.strip() for s in message.replace("\n", ", ").split(", ") if s.strip().startswith("quota ")), ""
        )
        parts.append(f"a quota change ({q})" if q else "a quota change")
    if best is None:
        parts.append(f"nodes with the label {key}" if key else "nodes")
    elif best["fit"] < needed:
        missing = needed - best["fit"]
        binding = best["binding"]
        if binding.startswith("resource:") and binding != "resource:pods":
            r = binding.split(":", 1)[1]
            parts.append(
                f"free {show_amount(r, missing * requests[r])} more {r} in {where} "
                f"(room for {missing} more pod(s) of {show_amount(r, requests[r])} each on nodes that admit them)"
            )
        elif binding.startswith("filter:"):
            parts.append(
                f"nodes in {where} that pass {binding.split(':', 1)[1]} (it rejects every node there)"
            )
        else:
            parts.append(f"room for {missing} more pod(s) in {where}")
    if "PreemptionNoVictims" in codes:
        parts.append(
            "preemption was tried and found no victims that would help (no lower-priority pods to evict)"
        )
    elif "PreemptionNotEligible" in codes:
        parts.append("preemption is not allowed for this group (preemptionPolicy Never or no quota)")
    if not parts:
        parts.append(f"{where} has room for the pods by resources; see the reason codes (pod-aware filters)")
    return "; or ".join(parts)


MAX_CHILDREN = 8


def why_of_group(
    state: Any,
    attempt: Any,
    queued: Mapping[str, Sequence[Pod]],
    pending: Sequence[Pod],
    codes: Sequence[str],
    message: str,
) -> dict[str, Any]:
    """``group_why`` for a PodGroup root; ``composite_why`` for a CompositePodGroup root (from
    the attempt's per-child statuses and the queued pods per leaf)."""
    if attempt.root_kind != "pg":
        return composite_why(state, attempt, queued)
    if attempt.root not in state.pod_groups:
        return {}
    return _leaf_why(state, attempt.root, pending, codes, message)


def _leaf_why(
    state: Any, key: str, pending: Sequence[Pod], codes: Sequence[str], message: str
) -> dict[str, Any]:
    pg = state.pod_groups[key]
    # ``members`` indexes the pods by group key (pending and bound)
    bound = sum(
        1
        for k in state.members.get(key, ())
        if (p := state.pods.get(k)) is not None and p.node_name and p.pod_group
    )
    return group_why(
        state.snap,
        pending,
        min_count=pg.minimum,
        bound=bound,
        topology_key=pg.topology_key,
        codes=codes,
        message=message,
    )


def composite_why(state: Any, attempt: Any, queued: Mapping[str, Sequence[Pod]]) -> dict[str, Any]:
    """The structured diagnosis of a CompositePodGroup root: which child groups block it and
    their leaf diagnoses. ``children``: per PodGroup leaf and nested CompositePodGroup of the
    tree, ``{group, kind, blocking, message}`` and, for a blocking leaf with pending pods, its
    ``codes``, ``need``, ``best`` domain (``group_why``'s first) and ``unblock``; blocking
    children first, then by name, at most ``MAX_CHILDREN`` (``more`` counts the others);
    ``blocking``: how many block; ``unblock``: the first blocking leaf's unblock line, named."""
    from scheduler.reason_codes import codes_of  # reason_codes imports the cycle package

    children: list[dict[str, Any]] = []
    for kind, prefix, keys in (
        ("PodGroup", "pg", attempt.leaves),
        ("CompositePodGroup", "cpg", attempt.cpgs),
    ):
        for key in sorted(keys):
            if kind == "CompositePodGroup" and key == attempt.root:
                continue  # the root's own verdict is the event's message
            st = attempt.results.get(f"{prefix}:{key}", attempt.status)
            entry: dict[str, Any] = {"group": key, "kind": kind, "blocking": not st.ok, "message": st.message}
            pending = list(queued.get(key, ())) if kind == "PodGroup" else []
            if not st.ok and kind == "PodGroup":
                entry["codes"] = list(codes_of(st.message, error=st.is_error))
                if pending and key in state.pod_groups:
                    w = _leaf_why(state, key, pending, entry["codes"], st.message)
                    entry["need"] = w["need"]
                    if w["domains"]:
                        entry["best"] = w["domains"][0]
                    entry["unblock"] = w["unblock"]
            children.append(entry)
    children.sort(key=lambda c: (not c["blocking"], c["kind"] != "PodGroup", c["group"]))
    blocking = [c for c in children if c["blocking"]]
    why: dict[str, Any] = {
        "composite": attempt.root,
        "blocking": len(blocking),
        "children": children[:MAX_CHILDREN],
    }
    if len(children) > MAX_CHILDREN:
        why["more"] = len(children) - MAX_CHILDREN
    first = next((c for c in blocking if c.get("unblock")), None)
    if first is not None:
        why["unblock"] = f"{first['group']}: {first['unblock']}"
    elif blocking:
        why["unblock"] = f"{blocking[0]['group']}: {blocking[0]['message'] or 'see its reason codes'}"
    return why
