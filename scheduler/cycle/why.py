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

For a PodGroup root's decision the listed domains are then run through the filters themselves
(``scheduler.cycle.exclusions``, recorded as the decision's ``exclusions``): a domain whose
pod-aware filters (ports, inter-pod affinity, spread) let fewer pods in than its resources gets
that count and, if resources were not binding, that filter as its binding constraint
(``rejectedPod``: the pod it rejected everywhere), so the diagnosis and the record agree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from scheduler.framework import signature_of
from scheduler.model import PODS, Pod
from scheduler.reference import RefNode, filter_node
from scheduler.snapshot import Snapshot, make_demand
from scheduler.units import show_amount

MAX_DOMAINS = 6
CLUSTER = "(cluster)"
_FREE_ANY = make_demand({})


def why_rejections(snap: Snapshot, pod: Pod) -> list[str | None]:
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
    bound_domains: Sequence[str] = (),
    evaluate: Callable[[Sequence[str]], dict[str, Any]] | None = None,
    seen: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The structured diagnosis (see the module docstring); ``{}`` without pending pods.
    ``bound_domains``: the domains of the group's bound members (upstream limits the group to
    them: only they are diagnosed). ``evaluate``: runs the filters over the listed domains
    (``scheduler.cycle.exclusions.evaluate_domains``); a domain's room is then what the filters
    let in (pod-aware ones included), and ``seen`` receives the compressed record."""
    if not pending:
        return {}
    pod = pending[0]
    requests = {r: int(v) for r, v in sorted(pod.requests.items()) if int(v) > 0 and r != PODS}
    needed = max(1, min(len(pending), min_count - bound))
    snap.refresh()
    rejected = why_rejections(snap, pod)
    n = len(snap.nodes)
    # per node, as Python ints: the free amount of each requested resource (at least 0), the
    # pods it has room for by that resource, and by all of them and the pod slots together
    free_of = {
        r: [max(f, 0) for f in snap.free[snap.res_index[r]].tolist()] if r in snap.res_index else [0] * n
        for r in requests
    }
    cap_of = {r: [f // amt for f in free_of[r]] for r, amt in requests.items()}
    slots = snap.free[snap.res_index[PODS]].tolist() if PODS in snap.res_index else [needed] * n
    room = list(slots)
    for caps in cap_of.values():
        room = list(map(min, room, caps))
    nodes_of: dict[str, list[int]] = {}  # candidate domain -> its nodes (domains by first node)
    for j, nd in enumerate(snap.nodes):
        dom = CLUSTER if not topology_key else nd.labels.get(topology_key)
        if dom is not None and (not bound_domains or dom in bound_domains):
            nodes_of.setdefault(dom, []).append(j)
    out: list[dict[str, Any]] = []
    score: dict[str, float] = {}
    for dom, nodes in nodes_of.items():
        filters: dict[str, int] = {}
        admitted: list[int] = []  # the nodes the node filters let the pod onto
        for j in nodes:
            rej = rejected[j]
            if rej is None:
                admitted.append(j)
            else:
                filters[rej] = filters.get(rej, 0) + 1
        d: dict[str, Any] = {
            "domain": dom,
            "nodes": len(nodes),
            "fit": min(sum(max(room[j], 0) for j in admitted), needed),
            "free": {r: show_amount(r, sum(free[j] for j in admitted)) for r, free in free_of.items()},
        }
        missing = needed - d["fit"]
        if missing <= 0:
            d["binding"] = "none"
            score[dom] = 0.0
        elif not admitted:
            d["binding"] = "filter:" + max(sorted(filters), key=lambda p: filters[p])
            score[dom] = float("inf")
        else:
            change = _smallest_change(snap, admitted, missing, requests, free_of, room, slots)
            d["change"] = change
            d["binding"] = "resource:" + _binding_resource(change, requests)
            score[dom] = sum(_cost(c["add"], requests) for c in change)
        if filters:
            d["excluded"] = dict(sorted(filters.items()))
        out.append(d)
    # closest first: most pods fit, then the smallest change that fits the rest, then the name
    out.sort(key=lambda d: (-d["fit"], score[d["domain"]], d["domain"]))
    if evaluate is not None:
        out[:MAX_DOMAINS] = _reconcile(out[:MAX_DOMAINS], evaluate, score, topology_key, seen)
    why: dict[str, Any] = {
        "need": {
            "pods": needed,
            "request": {r: show_amount(r, a) for r, a in requests.items()},
            "topologyKey": topology_key,
        },
        "domains": out[:MAX_DOMAINS],
    }
    if bound_domains:
        why["pinned"] = {"domains": sorted(bound_domains), "bound": bound}
    if len(out) > MAX_DOMAINS:
        why["more"] = len(out) - MAX_DOMAINS
    why["unblock"] = _unblock(out[0] if out else None, needed, requests, topology_key, codes, message)
    return why


def _reconcile(
    listed: list[dict[str, Any]],
    evaluate: Callable[[Sequence[str]], dict[str, Any]],
    score: Mapping[str, float],
    topology_key: str | None,
    seen: dict[str, Any] | None,
) -> list[dict[str, Any]]:
    """The listed domains with the room the filters found (``evaluate``): a domain whose
    resources hold more pods than its filters let in gets the filters' count, and, if the
    resources were not binding, the filter that rejected its failing pod on most nodes
    (``rejectedPod``: which pod); re-sorted; ``seen`` gets the compressed record."""
    from scheduler.cycle.exclusions import compress

    raw = evaluate([d["domain"] for d in listed])
    for d in listed:
        row = raw["rows"].get(d["domain"])
        if row is None or row[2] >= d["fit"]:
            continue
        d["fit"] = row[2]
        if d["binding"] == "none":
            by: dict[str, int] = {}
            for (dom, plugin, _stage, _reason), n in raw["counts"].items():
                if dom == d["domain"]:
                    by[plugin] = by.get(plugin, 0) + n
            if by:
                d["binding"] = "filter:" + max(sorted(by), key=lambda p: by[p])
                d["rejectedPod"] = row[3]
    listed.sort(key=lambda d: (-d["fit"], score[d["domain"]], d["domain"]))
    if seen is not None:
        seen.update(compress(raw, [d["domain"] for d in listed] if topology_key else ["(cluster)"]))
    return listed


def _cost(add: Mapping[str, int], requests: Mapping[str, int]) -> float:
    """How big a change is: the added amounts as fractions of one pod's request (a pod slot: 1)."""
    return sum(a / requests[r] if r in requests else 1.0 for r, a in add.items())


def _smallest_change(
    snap: Snapshot,
    admitted: Sequence[int],
    missing: int,
    requests: Mapping[str, int],
    free_of: Mapping[str, Sequence[int]],
    room: Sequence[int],
    slots: Sequence[int],
) -> list[dict[str, Any]]:
    """The smallest change that lets ``missing`` more pods into a domain: per admitted node, what
    one more pod there lacks after the pods it already has room for (``add``: base units per
    resource; ``free``: what the node has left for it); the ``missing`` cheapest, a node at
    most once; any further pod adds a whole pod's request to the cheapest node."""
    options: list[tuple[float, int, dict[str, Any]]] = []
    for j in admitted:
        k = max(room[j], 0)
        left = {r: free_of[r][j] - k * amt for r, amt in requests.items()}
        add = {r: amt - left[r] for r, amt in requests.items() if left[r] < amt}
        if slots[j] - k < 1:
            add[PODS] = 1
        options.append((_cost(add, requests), j, {"node": snap.names[j], "add": add, "free": left}))
    options.sort(key=lambda o: (o[0], o[1]))
    change = [o[2] for o in options[:missing]]
    extra = missing - len(change)
    if extra > 0 and change:  # more pods than nodes: the rest go to the cheapest node too
        first, left = change[0], change[0]["free"]
        add = {r: (1 + extra) * amt - left[r] for r, amt in requests.items() if left[r] < (1 + extra) * amt}
        if PODS in first["add"]:
            add[PODS] = first["add"][PODS] + extra
        first["add"] = add
    return change


def _binding_resource(change: Sequence[Mapping[str, Any]], requests: Mapping[str, int]) -> str:
    """The resource the change adds most of (as fractions of a request); ``pods`` for slots only."""
    total: dict[str, float] = {}
    for c in change:
        for r, a in c["add"].items():
            if r != PODS:
                total[r] = total.get(r, 0.0) + a / requests[r]
    if not total:
        return PODS
    return max(sorted(total), key=lambda r: total[r])


_FILTER_CODES = {
    "NodeAffinity": "NodeAffinityMismatch",
    "TaintToleration": "TaintNotTolerated",
    "NodeUnschedulable": "NodeUnschedulable",
    "NodeName": "NodeNameMismatch",
    "NodePorts": "NodePortsConflict",
}


def binding_code(why: Mapping[str, Any]) -> str | None:
    """The reason code of the closest domain's binding constraint (``resource:<r>`` ->
    ``InsufficientResource(<r>)``, ``filter:<plugin>`` -> that filter's code); None when the
    closest domain has room (or there is no diagnosis)."""
    from scheduler.reason_codes import resource_code  # reason_codes imports the cycle package

    domains = why.get("domains") or []
    if not domains:
        return None
    binding = str(domains[0].get("binding") or "none")
    kind, _, what = binding.partition(":")
    if kind == "resource":
        return resource_code(what)
    if kind == "filter":
        return _FILTER_CODES.get(what)
    return None


def rank_codes(codes: Sequence[str], why: Mapping[str, Any]) -> tuple[str, ...]:
    """``codes`` with the closest domain's binding constraint first (added when missing), so a
    view that counts an attempt under its first code counts it under what kept the closest
    domain from fitting, not under the first placement tried."""
    first = binding_code(why)
    if first is None or (codes and codes[0] == first):
        return tuple(codes)
    rest = [c for c in codes if c != first and c != "Unclassified"]
    return (first, *rest)


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
        binding = best["binding"]
        if binding.startswith("filter:") and best.get("rejectedPod"):
            parts.append(
                f"room for pod {best['rejectedPod']} in {where}: {binding.split(':', 1)[1]} rejects it on "
                "every node there although resources would hold it (a pod-aware filter; see explain --nodes)"
            )
        elif binding.startswith("filter:"):
            parts.append(
                f"nodes in {where} that pass {binding.split(':', 1)[1]} (it rejects every node there)"
            )
        else:
            steps = []
            for c in best.get("change") or []:
                need = ", ".join(f"{show_amount(r, requests[r])} {r}" for r in c["add"] if r in requests)
                if c["add"].get(PODS) and len(c["add"]) == 1:
                    steps.append(f"a free pod slot on {c['node']}")
                else:
                    more = " and ".join(f"{show_amount(r, a)} more {r}" for r, a in c["add"].items())
                    res = [r for r in c["add"] if r in requests]
                    if len(res) == 1:
                        r = res[0]
                        has = f"it has {show_amount(r, max(c['free'][r], 0))} of the {show_amount(r, requests[r])} a pod needs"
                    else:
                        has = (
                            "it has "
                            + ", ".join(f"{show_amount(r, max(c['free'][r], 0))} {r}" for r in res)
                            + f"; a pod needs {need}"
                        )
                    steps.append(f"free {more} on {c['node']} ({has})")
            parts.append(
                " and ".join(steps) if steps else f"room for {needed - best['fit']} more pod(s) in {where}"
            )
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
    seen: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``group_why`` for a PodGroup root; ``composite_why`` for a CompositePodGroup root (from
    the attempt's per-child statuses and the queued pods per leaf). ``seen``: receives a
    PodGroup root's per-node exclusions (``scheduler.cycle.exclusions``)."""
    if attempt.root_kind != "pg":
        return composite_why(state, attempt, queued)
    if attempt.root not in state.pod_groups:
        return {}
    keys = [p.key for p in queued.get(attempt.root, ())]
    return _leaf_why(state, attempt.root, pending, codes, message, keys if seen is not None else None, seen)


def _leaf_why(
    state: Any,
    key: str,
    pending: Sequence[Pod],
    codes: Sequence[str],
    message: str,
    record: Sequence[str] | None = None,
    seen: dict[str, Any] | None = None,
) -> dict[str, Any]:
    pg = state.pod_groups[key]
    # ``members`` indexes the pods by group key (pending and bound)
    bound = sum(
        1
        for k in state.members.get(key, ())
        if (p := state.pods.get(k)) is not None and p.node_name and p.pod_group
    )
    domains: set[str] = set()
    if pg.topology_key:
        for k in state.members.get(key, ()):
            p = state.pods.get(k)
            if p is None or not p.node_name or not p.pod_group:
                continue
            j = state.snap.index.get(p.node_name)
            if j is not None and (dom := state.snap.nodes[j].labels.get(pg.topology_key)) is not None:
                domains.add(dom)
    return group_why(
        state.snap,
        pending,
        min_count=pg.minimum,
        bound=bound,
        topology_key=pg.topology_key,
        codes=codes,
        message=message,
        bound_domains=sorted(domains),
        evaluate=None if record is None else _evaluator(state, record, pg.topology_key, bool(domains)),
        seen=seen,
    )


def _evaluator(
    state: Any, keys: Sequence[str], topology_key: str | None, pinned: bool
) -> Callable[[Sequence[str]], dict[str, Any]]:
    from scheduler.cycle.exclusions import evaluate_domains

    def run(domains: Sequence[str]) -> dict[str, Any]:
        return evaluate_domains(
            state.snap, state.pods, keys, topology_key=topology_key, domains=domains, pinned=pinned
        )

    return run


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


def summary_line(why: Mapping[str, Any]) -> str:
    """The diagnosis in one line (podledger's words, for the PodGroup's Event and explain):
    ``fits only 1 of 2 pods in the closest rack-4: each needs 6 nvidia.com/gpu, the best node
    has 5 free``. Empty without a domain diagnosis."""
    need = why.get("need") or {}
    domains = why.get("domains") or []
    if not domains:
        return ""
    best = domains[0]
    pods = need.get("pods")
    key = need.get("topologyKey")
    where = f"the closest {best['domain']}" if key else "the cluster"
    if why.get("pinned"):
        where = f"{best['domain']}, where its bound members are"
    head = f"fits only {best['fit']} of {pods} pods in {where}"
    binding = str(best.get("binding") or "none")
    kind, _, what = binding.partition(":")
    if kind == "filter" and best.get("rejectedPod"):
        return f"{head}: {what} rejects pod {best['rejectedPod']} on every node there"
    if kind == "filter":
        return f"{head}: {what} rejects all {best['nodes']} of its nodes"
    if kind == "resource" and what != PODS:
        each = (need.get("request") or {}).get(what)
        change = best.get("change") or []
        node_free = max((c["free"].get(what, 0) for c in change if c["node"] is not None), default=None)
        tail = (
            f"the best node has {show_amount(what, max(node_free, 0))} free" if node_free is not None else ""
        )
        return f"{head}: each needs {each} {what}" + (f", {tail}" if tail else "")
    if kind == "resource":
        return f"{head}: no free pod slots"
    return f"{head}: room by resources; see the reason codes"
