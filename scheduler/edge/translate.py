"""Manifests -> ``scheduler.model``: the translators the bridge (and the API) use.

Each takes a normalized manifest (as stored in the log) and returns the core's frozen object;
``seq`` is the log position at which the object was first observed (the tie-breaker of equal
priority and timestamp), ``created_at`` its first observation time. ``ts``/``from_ts`` convert
between the log's timestamps and the core's logical seconds. No IO, no clock.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

import orjson

from ledger.resources.models import pod_effective_requests
from scheduler import model as m
from scheduler import quota


def ts(dt: datetime) -> float:
    return dt.timestamp()


def from_ts(value: float) -> datetime:
    return datetime.fromtimestamp(value, UTC)


def _requirements(exprs: Iterable[Mapping[str, Any]] | None) -> tuple[m.Requirement, ...]:
    return tuple(
        m.Requirement(e["key"], e["operator"], tuple(str(v) for v in (e.get("values") or ())))
        for e in exprs or ()
    )


def _selector(sel: Mapping[str, Any] | None) -> m.LabelSelector | None:
    if sel is None:
        return None
    return m.LabelSelector(
        tuple(sorted((str(k), str(v)) for k, v in (sel.get("matchLabels") or {}).items())),
        _requirements(sel.get("matchExpressions")),
    )


def _merge_label_keys(
    sel: m.LabelSelector | None, labels: Mapping[str, str], match: Iterable[str], mismatch: Iterable[str]
) -> m.LabelSelector | None:
    """``matchLabelKeys`` (key In (pod's value)) / ``mismatchLabelKeys`` (key NotIn (pod's
    value)) merged into the selector for the keys the pod carries, as the API server does."""
    extra = [m.Requirement(k, "In", (labels[k],)) for k in match if k in labels]
    extra += [m.Requirement(k, "NotIn", (labels[k],)) for k in mismatch if k in labels]
    if not extra or sel is None:
        return sel
    return m.LabelSelector(sel.match_labels, (*sel.match_expressions, *extra))


def _affinity_term(t: Mapping[str, Any], labels: Mapping[str, str]) -> m.PodAffinityTerm:
    sel = _merge_label_keys(
        _selector(t.get("labelSelector")),
        labels,
        t.get("matchLabelKeys") or (),
        t.get("mismatchLabelKeys") or (),
    )
    return m.PodAffinityTerm(
        str(t.get("topologyKey") or ""),
        sel,
        tuple(str(x) for x in t.get("namespaces") or ()),
        _selector(t.get("namespaceSelector")),
    )


def _pod_affinity(
    spec: Mapping[str, Any], kind: str, labels: Mapping[str, str]
) -> tuple[tuple[m.PodAffinityTerm, ...], tuple[m.WeightedPodAffinityTerm, ...]]:
    aff = (spec.get("affinity") or {}).get(kind) or {}
    req = tuple(
        _affinity_term(t, labels) for t in aff.get("requiredDuringSchedulingIgnoredDuringExecution") or ()
    )
    pref = tuple(
        m.WeightedPodAffinityTerm(
            int(w.get("weight", 1)), _affinity_term(w.get("podAffinityTerm") or {}, labels)
        )
        for w in aff.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
    )
    return req, pref


def _spread(spec: Mapping[str, Any], labels: Mapping[str, str]) -> tuple[m.TopologySpreadConstraint, ...]:
    out = []
    for c in spec.get("topologySpreadConstraints") or ():
        md = c.get("minDomains")
        out.append(
            m.TopologySpreadConstraint(
                int(c.get("maxSkew") or 1),
                str(c.get("topologyKey") or ""),
                c.get("whenUnsatisfiable") or "DoNotSchedule",
                _merge_label_keys(
                    _selector(c.get("labelSelector")), labels, c.get("matchLabelKeys") or (), ()
                ),
                int(md) if md is not None else None,
                c.get("nodeAffinityPolicy") or "Honor",
                c.get("nodeTaintsPolicy") or "Ignore",
            )
        )
    return tuple(out)


def _host_ports(spec: Mapping[str, Any]) -> tuple[m.HostPort, ...]:
    """Host ports of containers and init containers (kube-scheduler's ``GetContainerPorts``)."""
    out = []
    for c in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
        for p in c.get("ports") or ():
            hp = int(p.get("hostPort") or 0)
            if hp > 0:
                out.append(m.HostPort(hp, p.get("protocol") or "TCP", p.get("hostIP") or "0.0.0.0"))
    return tuple(out)


def _policy_min(spec: Mapping[str, Any], field_name: str) -> int | None:
    pol = spec.get("schedulingPolicy") or {}
    gang = pol.get("gang")
    if gang is None:
        return None
    return int(gang.get(field_name) or 1)


def _topology_key(spec: Mapping[str, Any]) -> str | None:
    topo = (spec.get("schedulingConstraints") or {}).get("topology") or []
    return str(topo[0]["key"]) if topo else None


def _mode(spec: Mapping[str, Any]) -> str:
    dm = spec.get("disruptionMode") or {}
    return m.ALL if "all" in dm else m.SINGLE


def node_from(obj: Mapping[str, Any], seq: int) -> m.Node:
    meta, spec, status = obj.get("metadata", {}), obj.get("spec") or {}, obj.get("status") or {}
    alloc = dict(status.get("allocatable") or status.get("capacity") or {})
    alloc.setdefault(m.PODS, 110)
    return m.Node(
        name=meta["name"],
        allocatable={k: int(v) for k, v in alloc.items()},
        labels=dict(meta.get("labels") or {}),
        taints=tuple(
            m.Taint(t["key"], t.get("value") or "", t.get("effect") or "NoSchedule")
            for t in spec.get("taints") or ()
        ),
        unschedulable=bool(spec.get("unschedulable")),
        seq=seq,
    )


def pod_requests(spec: Mapping[str, Any]) -> dict[str, int]:
    """Kubernetes' effective request (containers, init containers incl. sidecars, overhead)."""
    return pod_effective_requests({"spec": spec})


def pod_from(
    obj: Mapping[str, Any],
    seq: int,
    created_at: float,
    status: Mapping[str, Any] | None = None,
    requests: Mapping[str, int] | None = None,
) -> m.Pod:
    meta, spec = obj.get("metadata", {}), obj.get("spec") or {}
    aff = ((spec.get("affinity") or {}).get("nodeAffinity")) or {}
    req = (aff.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
    pref = aff.get("preferredDuringSchedulingIgnoredDuringExecution") or []
    status = status or {}
    node = status.get("nodeName") or spec.get("nodeName")
    labels = dict(meta.get("labels") or {})
    aff_req, aff_pref = _pod_affinity(spec, "podAffinity", labels)
    anti_req, anti_pref = _pod_affinity(spec, "podAntiAffinity", labels)
    return m.Pod(
        namespace=meta.get("namespace") or "default",
        name=meta["name"],
        requests=dict(requests) if requests is not None else pod_requests(spec),
        uid=str(meta.get("uid") or ""),
        labels=dict(meta.get("labels") or {}),
        node_selector=dict(spec.get("nodeSelector") or {}),
        required_terms=tuple(m.NodeSelectorTerm(_requirements(t.get("matchExpressions"))) for t in req),
        preferred_terms=tuple(
            m.PreferredTerm(
                int(p.get("weight", 1)),
                m.NodeSelectorTerm(_requirements((p.get("preference") or {}).get("matchExpressions"))),
            )
            for p in pref
        ),
        tolerations=tuple(
            m.Toleration(
                t.get("key") or "", t.get("operator") or "Equal", t.get("value") or "", t.get("effect") or ""
            )
            for t in spec.get("tolerations") or ()
        ),
        priority=int(spec.get("priority") or 0),
        preemption_policy=spec.get("preemptionPolicy") or m.PREEMPT_LOWER,
        scheduler_name=spec.get("schedulerName") or m.DEFAULT_SCHEDULER,
        scheduling_gates=tuple(g["name"] for g in spec.get("schedulingGates") or ()),
        node_name=node,
        nominated_node=status.get("nominatedNodeName"),
        pod_group=(spec.get("schedulingGroup") or {}).get("podGroupName"),
        has_controller=any(o.get("controller") for o in meta.get("ownerReferences") or ()),
        seq=seq,
        created_at=created_at,
        start_time=created_at if node else None,
        spec_node_name=spec.get("nodeName") or None,
        host_ports=_host_ports(spec),
        affinity_required=aff_req,
        affinity_preferred=aff_pref,
        anti_affinity_required=anti_req,
        anti_affinity_preferred=anti_pref,
        spread_constraints=_spread(spec, labels),
        gpu=gpu_share_from(meta.get("annotations") or {}, bool(node)),
    )


class PodShapes:
    """``pod_from`` and ``pod_requests`` memoized per manifest shape, for folds that translate
    many pods made from a few templates (a Deployment's replicas, a gang's members).

    A shape is everything ``pod_from`` reads but the identity and the status: the spec, the
    labels (affinity and spread selectors merge them), the annotations (GPU share), the owner
    references and whether the pod is bound. Pods of one shape are copies of the first one
    translated (``model.copy_pod``) with their own name, namespace, uid, seq, times, node and
    nomination, and their own copies of the mutable mappings: equal to what ``pod_from`` builds.
    """

    LIMIT = 4096  # shapes kept; the cache starts over when full

    def __init__(self) -> None:
        self._shapes: dict[bytes, tuple[m.Pod, dict[str, int]]] = {}

    def pod(
        self, obj: Mapping[str, Any], seq: int, created_at: float, status: Mapping[str, Any] | None
    ) -> tuple[m.Pod, dict[str, int]]:
        """(``pod_from(obj, seq, created_at, status)``, the pod's effective requests); the
        requests mapping is shared by the pods of the shape: read it, never change it."""
        meta, spec = obj.get("metadata", {}), obj.get("spec") or {}
        status = status or {}
        node = status.get("nodeName") or spec.get("nodeName")
        try:
            key = orjson.dumps(
                (spec, meta.get("labels"), meta.get("annotations"), meta.get("ownerReferences"), bool(node))
            )
        except TypeError:  # not JSON-like data: no shape, translate it in full
            requests = pod_requests(spec)
            return pod_from(obj, seq, created_at, status, requests), requests
        hit = self._shapes.get(key)
        if hit is None:
            requests = pod_requests(spec)
            pod = pod_from(obj, seq, created_at, status, requests)
            if len(self._shapes) >= self.LIMIT:
                self._shapes.clear()
            self._shapes[key] = (pod, requests)
            return pod, requests
        tpl, requests = hit
        return m.copy_pod(
            tpl,
            namespace=meta.get("namespace") or "default",
            name=meta["name"],
            uid=str(meta.get("uid") or ""),
            requests=dict(tpl.requests),
            labels=dict(tpl.labels),
            node_selector=dict(tpl.node_selector),
            node_name=node,
            nominated_node=status.get("nominatedNodeName"),
            seq=seq,
            created_at=created_at,
            start_time=created_at if node else None,
        ), requests


def gpu_share_from(annotations: Mapping[str, Any], bound: bool) -> m.GpuShare | None:
    """The pod's device-level GPU request from the GPU-share annotations (``scheduler.gpushare``);
    None when ``alibabacloud.com/gpu-milli`` is absent or not a positive integer."""
    from scheduler import gpushare as gs

    raw = str(annotations.get(gs.GPU_MILLI, "")).strip()
    if not raw.isdigit() or int(raw) <= 0:
        return None
    milli = min(int(raw), gs.MILLI)
    count_raw = str(annotations.get(gs.GPU_COUNT, "1")).strip()
    count = int(count_raw) if count_raw.isdigit() else 1
    if milli < gs.MILLI:
        count = 1
    models = tuple(x.strip() for x in str(annotations.get(gs.GPU_MODEL, "")).split("|") if x.strip())
    index = gs.parse_index(str(annotations.get(gs.GPU_INDEX, ""))) if bound else ()
    return m.GpuShare(milli, count, models, index)


def _group_fields(obj: Mapping[str, Any], seq: int, created_at: float) -> dict[str, Any]:
    """What PodGroup and CompositePodGroup share (all but the gang minimum)."""
    meta, spec = obj.get("metadata", {}), obj.get("spec") or {}
    ref = spec.get("workloadRef") or {}
    return {
        "namespace": meta.get("namespace") or "default",
        "name": meta["name"],
        "topology_key": _topology_key(spec),
        "disruption_mode": _mode(spec),
        "priority": int(spec.get("priority") or 0),
        "preemption_policy": spec.get("preemptionPolicy") or m.PREEMPT_LOWER,
        "parent": spec.get("parentCompositePodGroupName"),
        "workload": ref.get("workloadName"),
        "template": ref.get("templateName"),
        "uid": str(meta.get("uid") or ""),
        "seq": seq,
        "created_at": created_at,
    }


def group_from(obj: Mapping[str, Any], seq: int, created_at: float) -> m.PodGroup:
    spec = obj.get("spec") or {}
    return m.PodGroup(min_count=_policy_min(spec, "minCount"), **_group_fields(obj, seq, created_at))


def composite_from(obj: Mapping[str, Any], seq: int, created_at: float) -> m.CompositePodGroup:
    spec = obj.get("spec") or {}
    return m.CompositePodGroup(
        min_group_count=_policy_min(spec, "minGroupCount"), **_group_fields(obj, seq, created_at)
    )


def pdb_from(obj: Mapping[str, Any]) -> m.PodDisruptionBudget:
    meta, spec = obj.get("metadata", {}), obj.get("spec") or {}
    sel = spec.get("selector") or {}
    return m.PodDisruptionBudget(
        namespace=meta.get("namespace") or "default",
        name=meta["name"],
        match_labels=dict(sel.get("matchLabels") or {}),
        match_expressions=_requirements(sel.get("matchExpressions")),
        min_available=spec.get("minAvailable"),
        max_unavailable=spec.get("maxUnavailable"),
    )


def config_from(obj: Mapping[str, Any] | None) -> m.SchedulerConfig:
    if not obj:
        return m.SchedulerConfig()
    spec = obj.get("spec") or obj
    base = m.SchedulerConfig()
    backoff = spec.get("backoff") or {}
    gates = dict(base.feature_gates)
    gates.update({k: bool(v) for k, v in (spec.get("featureGates") or {}).items()})
    weights = dict(base.plugin_weights)
    weights.update({k: int(v) for k, v in (spec.get("pluginWeights") or {}).items()})
    return m.SchedulerConfig(
        scoring_strategy=spec.get("scoringStrategy") or base.scoring_strategy,
        resource_weights={
            k: int(v) for k, v in (spec.get("resourceWeights") or base.resource_weights).items()
        },
        plugin_weights=weights,
        preemption_algorithm=spec.get("preemptionAlgorithm") or base.preemption_algorithm,
        backoff_initial_seconds=float(backoff.get("initialSeconds", base.backoff_initial_seconds)),
        backoff_max_seconds=float(backoff.get("maxSeconds", base.backoff_max_seconds)),
        unschedulable_flush_seconds=float(
            spec.get("podMaxInUnschedulablePodsDuration", base.unschedulable_flush_seconds)
        ),
        percentage_of_nodes_to_score=int(
            spec.get("percentageOfNodesToScore", base.percentage_of_nodes_to_score)
        ),
        percentage_of_placements_to_score=int(
            spec.get("percentageOfPlacementsToScore", base.percentage_of_placements_to_score)
        ),
        feature_gates=gates,
        scheduler_name=spec.get("schedulerName") or None,
        controller_emulation=bool(spec.get("controllerEmulation", True)),
        also_serves=tuple(spec.get("additionalSchedulerNames") or ()),
    )


# fields added after the hash was defined: left out at their default so that existing
# configurations keep their hash
_HASH_DEFAULTS = {
    "percentage_of_nodes_to_score": 100,
    "percentage_of_placements_to_score": 0,
    "scheduler_name": None,
    "controller_emulation": True,
    "also_serves": (),
}


def config_hash(config: m.SchedulerConfig) -> str:
    d = asdict(config)
    for k, v in _HASH_DEFAULTS.items():
        if d.get(k) == v:
            d.pop(k, None)
    return hashlib.sha256(orjson.dumps(d, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def quota_from(kind: str, obj: Mapping[str, Any]) -> tuple[str, list[m.QuotaNode]]:
    """(quota key ``<kind>:ns/name``, its QuotaNodes) of an ElasticQuota or ElasticQuotaTree."""
    meta, spec = obj.get("metadata", {}), obj.get("spec") or {}
    ns, name = meta.get("namespace") or "default", meta["name"]
    if kind == "ElasticQuota":
        nodes = [quota.node_from_flat(ns, name, spec)]
    else:
        nodes = quota.nodes_from_tree(spec.get("root") or {})
    return f"{kind}:{ns}/{name}", nodes
