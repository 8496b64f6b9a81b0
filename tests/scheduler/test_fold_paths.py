"""The fold's fast paths equal the plain computations they replace: ``copy_pod`` (a mutable
draft turned into a Pod; one typed keyword per field), ``Workload``'s counts by type fields, the snapshot's cells written through
memoryviews and the controller flag read from the translated pod; and a plain pod's queue entity
is what ``_touch`` makes."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import random
import textwrap
from collections import Counter

import numpy as np
import pytest

from scheduler import gpushare as gs
from scheduler.edge import controllers
from scheduler.edge.translate import PodShapes, pod_from
from scheduler.model import GpuShare, HostPort, Node, Pod, Toleration, copy_pod
from scheduler.scheduler import Scheduler
from scheduler.snapshot import Snapshot, make_demand


def _rich_pod() -> Pod:
    return Pod(
        "ns",
        "p",
        {"cpu": 250, "memory": 1 << 30},
        uid="u",
        labels={"app": "a"},
        node_selector={"zone": "a"},
        tolerations=(Toleration("k", "Exists"),),
        priority=3,
        host_ports=(HostPort(80),),
        gpu=GpuShare(500, 1, ("T4",), (1,)),
    )


def test_copy_pod_equals_dataclasses_replace_for_every_field() -> None:
    p = _rich_pod()
    other = Pod("o", "q", {"cpu": 1}, uid="v", priority=9, node_name="n", seq=4, gpu=GpuShare(1000, 2))
    for f in dataclasses.fields(Pod):
        value = getattr(other, f.name)
        got = copy_pod(p, **{f.name: value})
        assert type(got) is Pod
        assert got == dataclasses.replace(p, **{f.name: value}), f.name
        assert getattr(got, f.name) is value
    every = {f.name: getattr(other, f.name) for f in dataclasses.fields(Pod)}
    assert copy_pod(p, **every) == other
    assert copy_pod(p) == p and copy_pod(p) is not p
    assert copy_pod(p, name="x").key == "ns/x"


def test_copy_pod_has_one_typed_keyword_per_field() -> None:
    """Every field of Pod, in order, is a keyword-only parameter typed as the field (or the
    keep marker), and the body stores each of them: a field added to Pod without its line in
    ``copy_pod`` fails here (and its copies would lack the slot)."""
    params = list(inspect.signature(copy_pod).parameters.values())
    assert params[0].name == "pod" and params[0].kind is inspect.Parameter.POSITIONAL_ONLY
    fields = dataclasses.fields(Pod)
    assert [p.name for p in params[1:]] == [f.name for f in fields]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[1:])
    assert [p.annotation for p in params[1:]] == [f"{f.type} | _Keep" for f in fields]
    body = ast.parse(textwrap.dedent(inspect.getsource(copy_pod))).body[0]
    stores = {ast.unparse(n) for n in ast.walk(body) if isinstance(n, ast.Assign)}
    missing = [
        f.name
        for f in fields
        if f"new.{f.name} = pod.{f.name} if {f.name} is _KEEP else {f.name}" not in stores
    ]
    assert missing == []


def test_copied_pods_stay_frozen_and_reject_unknown_fields() -> None:
    q = copy_pod(_rich_pod(), node_name="n")
    with pytest.raises(dataclasses.FrozenInstanceError):
        q.node_name = "m"  # type: ignore[misc]
    with pytest.raises(TypeError):
        copy_pod(q, no_such_field=1)
    assert hash(q.gpu) == hash(_rich_pod().gpu)  # slots hold the same objects


def _random_pod(rng: random.Random, i: int) -> Pod:
    cpu = rng.choice((0, 100, 250, 4000))
    gpu = None
    if rng.random() < 0.5:
        gpu = GpuShare(
            rng.choice((100, 500, 1000)),
            rng.choice((1, 2)),
            rng.choice(((), ("T4",), ("A10", "T4"))),
            rng.choice(((), (0,), (1, 2))),
        )
    return Pod("ns", f"p{i}", {"cpu": cpu} if cpu else {"memory": 1}, gpu=gpu)


def _reference_typical(counts: Counter[gs.PodType]) -> tuple[tuple[gs.PodType, float], ...]:
    """``Workload.typical`` as defined on a Counter of PodTypes (the definition before the
    counts were kept by type fields)."""
    total = sum(counts.values())
    ranked = sorted(
        counts.items(), key=lambda kv: (-kv[1], -kv[0].cpu, -kv[0].milli, -kv[0].count, kv[0].models)
    )
    chosen, cum = [], 0
    for t, c in ranked:
        if cum * 100 >= gs.TYPICAL_THRESHOLD * total:
            break
        chosen.append((t, c))
        cum += c
    return tuple((t, c / cum) for t, c in chosen) if cum else ()


def test_workload_counts_as_a_counter_of_pod_types() -> None:
    rng = random.Random(14)
    w = gs.Workload()
    ref: Counter[gs.PodType] = Counter()
    pods = [_random_pod(rng, i) for i in range(60)]
    for step in range(3000):
        p = rng.choice(pods)
        if rng.random() < 0.55:
            w.add(p)
            ref[gs.pod_type(p)] += 1
        else:  # removing a type never added is a no-op, as on the Counter
            w.remove(p)
            t = gs.pod_type(p)
            if ref.get(t, 0) <= 1:
                ref.pop(t, None)
            else:
                ref[t] -= 1
        if step % 50 == 0:
            assert w.typical() == _reference_typical(ref)
    assert w.typical() == _reference_typical(ref)


def test_snapshot_cells_follow_rebuilds_and_new_resources() -> None:
    rng = random.Random(3)
    s = Snapshot()
    for i in range(5):
        s.upsert_node(Node(f"n{i}", {"cpu": 8000, "memory": 1 << 34, "ex/a": 4}, seq=i))
    live: dict[str, tuple[str, dict[str, int]]] = {}
    for step in range(400):
        key = f"p{rng.randrange(40)}"
        if key in live and rng.random() < 0.5:
            s.remove_pod(key)
            del live[key]
        else:
            req = {"cpu": rng.choice((0, 100, 700)), "memory": rng.choice((0, 1 << 20))}
            if rng.random() < 0.2:
                req[f"ex/{rng.choice('abc')}"] = 1  # b and c: resources the nodes do not list
            node = f"n{rng.randrange(6)}"  # n5 is not a node
            s.add_pod(key, node, make_demand(req), None)
            live[key] = (node, req)
        if step % 97 == 0:
            s.upsert_node(Node(f"n{step % 7}", {"cpu": 9000, "pods": 50}, seq=step))  # stale: rebuilt
        s.refresh()
        fresh = Snapshot()
        fresh.ensure_resources(s.res_names)  # the same rows in the same order
        for nd in s._nodes.values():
            fresh.upsert_node(nd)
        for k, (node, req) in live.items():
            fresh.add_pod(k, node, make_demand(req), None)
        fresh.refresh()
        assert fresh.res_names == s.res_names
        assert np.array_equal(fresh.free, s.free) and np.array_equal(fresh.nz, s.nz)


def test_plain_pod_entity_is_what_touch_makes() -> None:
    sch = Scheduler()
    pods = [
        Pod("ns", "a", {"cpu": 1}, priority=5, seq=7),
        Pod("pg", "b", {"cpu": 1}, priority=1, seq=2),  # a namespace named like an entity kind
        Pod("cpg", "c", {"cpu": 1}, seq=3),
    ]
    for p in pods:
        sch.upsert_pod(p, 1.0)
        e = sch.queue.entities[p.key]
        assert (e.kind, e.priority, e.seq, e.timestamp) == ("pod", p.priority, p.seq, 1.0)
        before = (e.kind, e.priority, e.seq, e.timestamp, e.state)
        sch._touch(p.key, 1.0)
        assert (e.kind, e.priority, e.seq, e.timestamp, e.state) == before
        assert p.key in sch.queue.dirty


def test_has_controller_of_the_translated_pod() -> None:
    shapes = PodShapes()
    refs = (None, [], [{"kind": "Job", "name": "j"}], [{"kind": "Job", "controller": False}])
    refs += ([{"kind": "RS", "name": "r", "controller": True}], [{"controller": None}, {"controller": 1}])
    for i, owners in enumerate(refs * 2):  # the second round hits the cached shapes
        meta: dict[str, object] = {"name": f"p{i}", "namespace": "ns"}
        if owners is not None:
            meta["ownerReferences"] = owners
        obj = {"metadata": meta, "spec": {"containers": []}}
        pod, _ = shapes.pod(obj, i, 0.0, None)
        assert pod.has_controller == controllers.has_controller(obj) == pod_from(obj, i, 0.0).has_controller
