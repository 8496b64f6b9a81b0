"""PodShapes (scheduler/edge/translate.py): a pod translated from a cached shape equals pod_from's."""

from __future__ import annotations

import copy
from typing import Any

from scheduler import gpushare as gs
from scheduler.edge.translate import PodShapes, pod_from, pod_requests
from scheduler.model import Pod, copy_pod
from scheduler.snapshot import make_demand


def _pod(name: str, ns: str | None = "ns", **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{name}"}
    if ns is not None:
        meta["namespace"] = ns
    base = {"containers": [{"name": "c", "resources": {"requests": {"cpu": 250, "memory": 1 << 30}}}]}
    return {"kind": "Pod", "metadata": meta, "spec": {**base, **spec}}


RICH = dict(
    priority=5,
    nodeSelector={"zone": "a"},
    tolerations=[{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
    affinity={
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "x", "operator": "In", "values": ["1"]}]}]
            }
        },
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "topologyKey": "zone",
                    "labelSelector": {"matchLabels": {"app": "a"}},
                    "matchLabelKeys": ["app"],
                }
            ]
        },
    },
    topologySpreadConstraints=[{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}],
    schedulingGroup={"podGroupName": "g"},
    initContainers=[{"name": "i", "resources": {"requests": {"cpu": 1000}}}],
)


def _variants() -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    out: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
    for i in range(3):
        out.append((_pod(f"plain-{i}"), None))
        out.append((_pod(f"nons-{i}", ns=None), None))
        rich = _pod(f"rich-{i}", **copy.deepcopy(RICH))
        rich["metadata"]["labels"] = {"app": "a"}
        out.append((rich, None))
        other = _pod(f"other-{i}", **copy.deepcopy(RICH))
        other["metadata"]["labels"] = {"app": "b"}  # other labels: other merged selectors
        out.append((other, None))
        gpu = _pod(f"gpu-{i}")
        gpu["metadata"]["annotations"] = {gs.GPU_MILLI: "250", gs.GPU_INDEX: "1"}
        out.append((gpu, None))
        out.append((copy.deepcopy(gpu), {"nodeName": "n1"}))  # bound: the index counts
        owned = _pod(f"owned-{i}")
        owned["metadata"]["ownerReferences"] = [{"kind": "Job", "name": "j", "controller": True}]
        out.append((owned, None))
        out.append((_pod(f"bound-{i}"), {"nodeName": "n2", "nominatedNodeName": None}))
        out.append((_pod(f"nominated-{i}"), {"nodeName": None, "nominatedNodeName": "n3"}))
        out.append((_pod(f"spec-node-{i}", nodeName="n4"), None))
    return out


def test_pods_from_cached_shapes_equal_pod_from() -> None:
    shapes = PodShapes()
    for seq, (obj, status) in enumerate(_variants(), start=1):
        got, requests = shapes.pod(obj, seq, float(seq), status)
        want = pod_from(obj, seq, float(seq), status)
        assert got == want, obj["metadata"]["name"]
        assert requests == pod_requests(obj["spec"]) == want.requests
        # each pod owns its mappings
        assert got.labels is not want.labels or got is want
    assert len(shapes._shapes) < len(_variants())  # the later copies were hits


def test_pods_of_one_shape_do_not_share_mutable_mappings() -> None:
    shapes = PodShapes()
    a, _ = shapes.pod(_pod("a", nodeSelector={"z": "1"}), 1, 1.0, None)
    b, _ = shapes.pod(_pod("b", nodeSelector={"z": "1"}), 2, 2.0, None)
    assert a.requests is not b.requests and a.node_selector is not b.node_selector
    assert a.labels is not b.labels
    assert (b.name, b.seq, b.created_at, b.uid) == ("b", 2, 2.0, "uid-b")


def test_copy_pod_keeps_every_field_but_the_changed_ones() -> None:
    obj = _pod("rich", **copy.deepcopy(RICH))
    p = pod_from(obj, 7, 3.0)
    assert copy_pod(p) == p
    q = copy_pod(p, node_name="n", start_time=4.0)
    assert (q.node_name, q.start_time) == ("n", 4.0)
    assert copy_pod(q, node_name=None, start_time=None) == p
    assert isinstance(q, Pod)


def test_make_demand_is_memoized_and_equal() -> None:
    r = {"cpu": 250, "memory": 1 << 30, "pods": 1}
    d1, d2 = make_demand(r), make_demand(dict(r))
    assert d1 is d2
    assert d1.names == ("cpu", "memory") and d1.amounts == (250, 1 << 30)
    assert make_demand({"cpu": 0}).nz_cpu > 0
