"""Device-level GPU sharing in the core and the six placement policies of the FGD paper, on tiny
hand-computed cases (pure: no DB)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from scheduler import gpufrag
from scheduler import gpushare as gs
from scheduler.decisions import PodBound, PodUnschedulable
from scheduler.model import GpuShare, Node, Pod, SchedulerConfig
from scheduler.plugins import gpu
from scheduler.plugins.gpu import Ctx, best_fit, dot_product, fgd, gpu_clustering, gpu_packing, random_fit
from tests.scheduler.sched_helpers import GI, ZERO_BACKOFF, Sim

MODEL = gs.GPU_MODEL


def gnode(name: str, gpus: int, cpu: int = 32, model: str = "") -> Node:
    alloc = {"cpu": cpu * 1000, "memory": 256 * GI, "pods": 110, gs.NVIDIA_GPU: gpus}
    return Node(name, alloc, {MODEL: model} if model else {})


def gpod(name: str, milli: int, count: int = 1, cpu: int = 1, models: tuple[str, ...] = ()) -> Pod:
    return Pod("default", name, {"cpu": cpu * 1000}, priority=100, gpu=GpuShare(milli, count, models))


def binds(sim: Sim) -> dict[str, tuple[str, tuple[int, ...] | None]]:
    return {d.pod: (d.node, d.gpus) for d in sim.decisions() if isinstance(d, PodBound)}


def test_shares_land_on_devices_and_a_share_that_fits_no_device_fails() -> None:
    sim = Sim()
    sim.apply(gnode("n1", 2))
    sim.apply(gpod("a", 600), gpod("b", 600), gpod("c", 400))
    assert binds(sim) == {
        "default/a": ("n1", (0,)),
        "default/b": ("n1", (1,)),
        "default/c": ("n1", (0,)),  # best fit: device 0 has exactly 400 left
    }
    # 3 x 600 fit the node's 2,000 milli in total but no device has 600 left
    sim.apply(gpod("d", 600))
    fail = [d for d in sim.decisions() if isinstance(d, PodUnschedulable) and d.pod == "default/d"]
    assert fail and "1 Insufficient alibabacloud.com/gpu-milli" in fail[0].message
    assert sim.s.pod("default/a").gpu.index == (0,)  # type: ignore[union-attr]


def test_whole_gpu_pods_take_fully_free_devices_and_deletion_frees_them() -> None:
    sim = Sim()
    sim.apply(gnode("n1", 4))
    sim.apply(gpod("s", 300))
    sim.apply(gpod("w", 1000, count=3))
    assert binds(sim)["default/w"] == ("n1", (1, 2, 3))
    sim.apply(gpod("w2", 1000, count=1))
    assert "default/w2" not in binds(sim)
    sim.delete("Pod", "default/s")
    assert binds(sim)["default/w2"] == ("n1", (0,))


def test_model_annotation_and_plain_pods_are_unchanged() -> None:
    sim = Sim()
    sim.apply(gnode("a", 1, model="A"), gnode("b", 1, model="B"))
    sim.apply(gpod("only-b", 500, models=("B",)), Pod("default", "plain", {"cpu": 1000}, priority=100))
    got = binds(sim)
    assert got["default/only-b"] == ("b", (0,))
    assert got["default/plain"][1] is None


# ----------------------------------------------------------------------------- policies
def view(free: list[list[int]], cpu: list[int], tags: dict[str, list[int]] | None = None) -> gs.GpuView:
    return gs.GpuView(
        np.arange(len(free), dtype=np.intp),
        np.array(free, dtype=np.int64),
        np.array(cpu, dtype=np.int64),
        np.zeros(len(free), dtype=np.intp),
        {k: np.array(v, dtype=np.int64) for k, v in (tags or {}).items()},
    )


# node A: idle, 2 devices, 64 cores free; node B: one device with 500 milli free, 32 cores free
AB = view([[1000, 1000], [500, -1]], [64000, 32000], {"share-gpu": [0, 1]})
SHARE = gpod("p", 500, cpu=8)


def ctx(v: gs.GpuView, p: Pod = SHARE, w: gs.Workload | None = None) -> Ctx:
    return Ctx(v, p, gs.request_of(p), int(p.requests["cpu"]), p.key, w or gs.Workload())


def test_best_fit_scores() -> None:
    # A: 1 - (0.5*56000/128000 + 0.5*1500/8000) = 0.6875; B: 1 - (0.5*24000/128000 + 0) = 0.90625
    assert best_fit.score(ctx(AB))[0].tolist() == [68, 90]


def test_dot_product_scores() -> None:
    # A: dot = 0.5*0.0625 + 0.25*0.0625 = 0.046875 -> 100*(1-0.0234375); B: 0.015625 + 0.00390625
    assert dot_product.score(ctx(AB))[0].tolist() == [97, 99]


def test_gpu_packing_scores() -> None:
    # A is idle: max(33 - 2, 2); B: share on a used device with 50 % free -> 100 - 50 // 10
    assert gpu_packing.score(ctx(AB))[0].tolist() == [31, 95]
    whole = gpod("w", 1000, count=1)
    used = view([[1000, 300], [1000, 1000]], [8000, 8000])
    # node 0 is used: a fully free device -> max(50 - 1, 33); node 1 is idle -> max(33 - 2, 2)
    assert gpu_packing.score(ctx(used, whole))[0].tolist() == [49, 31]


def test_gpu_clustering_scores() -> None:
    # A: idle -> 25 + 25*6000//8000; B: only share-gpu pods -> 75 + 25*7500//8000
    assert gpu_clustering.score(ctx(AB))[0].tolist() == [43, 98]
    mixed = view([[500, 1000]], [8000], {"share-gpu": [1], "2-gpu": [1]})
    assert gpu_clustering.score(ctx(mixed))[0].tolist() == [50 + 25 * 6500 // 8000]
    other = view([[1000, 0]], [8000], {"1-gpu": [1]})
    assert gpu_clustering.score(ctx(other))[0].tolist() == [25 * 7000 // 8000]


def test_fragmentation_and_fgd_avoid_leaving_a_useless_remainder() -> None:
    w = gs.Workload()
    for _ in range(3):
        w.add(gpod("t", 500, cpu=1))
    w.add(Pod("default", "cpu-only", {"cpu": 1000}))
    typ = w.typical()
    assert [(t.milli, round(p, 2)) for t, p in typ] == [(500, 0.75), (0, 0.25)]
    v = view([[1000, 1000], [700, -1]], [8000, 8000])
    # a 500 share fits everywhere (no device < 500); the CPU-only type counts all free milli
    assert gpufrag.fragmentation(v.free, v.cpu, v.mid, typ).tolist() == [500.0, 175.0]
    # FGD: on A the share leaves [500, 1000] (frag 0.25*1500); on B [200] (all 200 are fragment)
    s, dev = fgd.score(ctx(v, gpod("p", 500), w))
    a = int(100 / (1 + np.exp(-(500 - 375) / 1000)))
    b = int(100 / (1 + np.exp(-(175 - 200) / 1000)))
    assert s.tolist() == [a, b] and a > b and dev is not None and dev.tolist()[0] == 0
    # BestFit prefers the tight node B instead
    assert best_fit.score(ctx(v, gpod("p", 500), w))[0].argmax() == 1


def test_fgd_tries_every_device_of_a_share_pod() -> None:
    w = gs.Workload()
    w.add(gpod("t", 600))
    v = view([[1000, 700]], [8000])
    # 600 on device 0 leaves [400, 700] (400 is fragment), on device 1 [1000, 100] (100)
    s, dev = fgd.score(ctx(v, gpod("p", 600), w))
    assert dev is not None and dev.tolist() == [1]


def test_random_is_a_deterministic_hash_of_the_pod_key() -> None:
    v = view([[1000]] * 8, [8000] * 8)
    picks = {int(random_fit.score(ctx(v, gpod(f"p{i}", 500)))[0].argmax()) for i in range(40)}
    assert len(picks) > 4
    again = random_fit.score(ctx(v, gpod("p7", 500)))[0]
    assert again.tolist() == random_fit.score(ctx(v, gpod("p7", 500)))[0].tolist()


def test_policy_is_selected_by_plugin_weight_and_changes_placement() -> None:
    def run(policy: str) -> dict[str, tuple[str, tuple[int, ...] | None]]:
        cfg = replace(ZERO_BACKOFF, plugin_weights={**ZERO_BACKOFF.plugin_weights, policy: 1})
        sim = Sim(cfg)
        sim.apply(gnode("big", 2, cpu=64), gnode("small", 1, cpu=16))
        sim.apply(replace(gpod("a", 300, cpu=8), node_name="small", gpu=GpuShare(300, 1, (), (0,))))
        sim.apply(gpod("x", 500, cpu=8))
        return binds(sim)

    assert gpu.active({"FGD": 1}) is fgd and gpu.active({"NodeResourcesFit": 1}) is None
    # BestFit: small leaves 0 cores and 200 milli (score 98), big 56 cores and 1,500 milli (68)
    assert run("BestFit")["default/x"] == ("small", (0,))
    assert run("GpuPacking")["default/x"] == ("small", (0,))  # joins the used device
    # FGD (typical pods 300 and 500, half each): small would keep 200 useless milli (score 45),
    # big none (50)
    assert run("FGD")["default/x"] == ("big", (0,))


def test_config_default_is_unchanged() -> None:
    assert gpu.active(SchedulerConfig().plugin_weights) is None


def test_annotations_translate_to_a_gpu_share_request() -> None:
    from scheduler.edge.translate import gpu_share_from, pod_from

    ann = {gs.GPU_MILLI: "460", gs.GPU_COUNT: "1", gs.GPU_MODEL: "T4|P100"}
    assert gpu_share_from(ann, False) == GpuShare(460, 1, ("T4", "P100"))
    assert gpu_share_from({gs.GPU_MILLI: "1000", gs.GPU_COUNT: "4"}, False) == GpuShare(1000, 4)
    # a share is always one device; the index counts only for a pod created already bound
    assert gpu_share_from({gs.GPU_MILLI: "500", gs.GPU_COUNT: "3", gs.GPU_INDEX: "2"}, True) == GpuShare(
        500, 1, (), (2,)
    )
    assert gpu_share_from({gs.GPU_MILLI: "x"}, False) is None and gpu_share_from({}, False) is None
    obj = {"metadata": {"name": "p", "annotations": {gs.GPU_MILLI: "250", gs.GPU_INDEX: "1"}}, "spec": {}}
    bound = pod_from(obj, 1, 0.0, {"nodeName": "n1"})
    assert bound.gpu == GpuShare(250, 1, (), (1,))
    assert gs.bound_demand(bound).as_dict()[gs.device_resource(1)] == 250


# ----------------------------------------------------------------------------- gangs
def test_share_pods_in_a_gang_get_devices_and_a_gang_that_fits_no_devices_waits() -> None:
    from tests.scheduler.sched_helpers import pg

    def member(name: str, milli: int, group: str) -> Pod:
        return replace(gpod(name, milli), pod_group=group)

    sim = Sim()
    sim.apply(gnode("n1", 2))
    sim.apply(pg("duo", 2), member("d-1", 600, "duo"), member("d-2", 600, "duo"))
    got = binds(sim)
    assert {got["default/d-1"], got["default/d-2"]} == {("n1", (0,)), ("n1", (1,))}
    assert sim.s.pod("default/d-1").gpu.index == got["default/d-1"][1]  # type: ignore[union-attr]
    # three 600-milli members: n1's devices have 400 left each, n2 holds one -> minCount 3 fails
    # although the cluster has 1,800 milli free in total
    sim.apply(gnode("n2", 1))
    sim.apply(pg("trio", 3), *(member(f"t-{i}", 600, "trio") for i in range(3)))
    assert not any(k.startswith("default/t-") for k in binds(sim))
    cond = sim.cond("trio")
    assert cond is not None and cond[:2] == ("False", "Unschedulable") and "minCount (3) cannot" in cond[2]
    # four 400-milli members fit: n1's two remainders and n2's device (twice)
    sim.apply(pg("four", 4), *(member(f"f-{i}", 400, "four") for i in range(4)))
    got = binds(sim)
    used: dict[tuple[str, int], int] = {}
    for key, (node, devs) in got.items():
        for dv in devs or ():
            used[(node, dv)] = used.get((node, dv), 0) + sim.s.pod(key).gpu.milli  # type: ignore[union-attr]
    assert all(f"default/f-{i}" in got for i in range(4))
    assert used == {("n1", 0): 1000, ("n1", 1): 1000, ("n2", 0): 800}


def test_a_gang_under_a_gpu_policy_is_placed_by_the_policy() -> None:
    from tests.scheduler.sched_helpers import pg

    sim = Sim(replace(ZERO_BACKOFF, plugin_weights={"FGD": 1}))
    sim.apply(gnode("a", 1), gnode("b", 1))
    sim.apply(gpod("x", 500))  # on a (equal scores: the lowest index)
    sim.apply(pg("g", 2), replace(gpod("g-1", 500), pod_group="g"), replace(gpod("g-2", 1000), pod_group="g"))
    got = binds(sim)
    # FGD fills a's half-used device with the 500 share and puts the whole GPU on b
    assert got["default/g-1"] == ("a", (0,)) and got["default/g-2"] == ("b", (0,))


def test_a_topology_gang_keeps_the_devices_of_its_evaluated_placement() -> None:
    from tests.scheduler.sched_helpers import pg

    def rack_node(name: str, rack: str, gpus: int) -> Node:
        n = gnode(name, gpus)
        return replace(n, labels={**n.labels, "rack": rack})

    sim = Sim()
    # rack a: one GPU; rack b: two GPUs. A pair of 600-milli shares fits only rack b
    sim.apply(rack_node("a1", "a", 1), rack_node("b1", "b", 2))
    sim.apply(pg("pair", 2, key="rack"), *(replace(gpod(f"p-{i}", 600), pod_group="pair") for i in range(2)))
    got = binds(sim)
    assert {got["default/p-0"], got["default/p-1"]} == {("b1", (0,)), ("b1", (1,))}
    # the snapshot holds the devices: a third 600 share fits only a1
    sim.apply(gpod("third", 600))
    assert binds(sim)["default/third"] == ("a1", (0,))


def test_view_of_reads_every_device_of_every_node() -> None:
    sim = Sim()
    sim.apply(gnode("a", 2), gnode("b", 4, model="T4"), gnode("c", 1), gnode("d", 8))
    sim.apply(gpod("p", 300), gpod("q", 700), gpod("r", 1000, count=3), gpod("s", 250, models=("T4",)))
    snap = sim.s.state.podsched.snap
    v = gs.view_of(snap, np.arange(snap.n, dtype=np.intp), with_tags=True)
    want: dict[str, list[int]] = {n.name: [1000] * int(n.allocatable[gs.NVIDIA_GPU]) for n in snap.nodes}
    for key, (node, devs) in binds(sim).items():
        for dv in devs or ():
            want[node][dv] -= sim.s.pod(key).gpu.milli  # type: ignore[union-attr]
    for i, name in enumerate(snap.names):
        row = v.free[i].tolist()
        assert row[: len(want[name])] == want[name] and all(x == -1 for x in row[len(want[name]) :])
    assert v.models == ["", "T4", "", ""] and v.free.shape == (4, 8)
    assert gs.view_of(snap, np.array([2], dtype=np.intp)).free.tolist() == [want["c"]]


def test_the_device_table_follows_pods_added_removed_and_rolled_back() -> None:
    """``view_of`` reads a per-snapshot table kept up to date from the change log: after binds,
    a deletion and a rolled-back assume it equals the table read afresh from the snapshot."""
    sim = Sim()
    sim.apply(gnode("a", 2), gnode("b", 4, model="T4"), gnode("c", 1))
    sim.apply(gpod("p", 300), gpod("q", 700), gpod("r", 1000, count=2))
    snap = sim.s.state.podsched.snap
    everyone = np.arange(snap.n, dtype=np.intp)

    def afresh() -> list[list[int]]:
        snap.caches.gpu_devices = None
        return gs.view_of(snap, everyone).free.tolist()

    first = gs.view_of(snap, everyone).free.tolist()
    assert first == afresh()
    sim.delete("Pod", "default/q")
    kept = gs.view_of(snap, everyone).free.tolist()  # follows the deletion from the log
    assert kept == afresh() and kept != first
    mark = snap.backup()
    share = replace(gpod("t", 500), gpu=GpuShare(500, 1, (), (0,)))
    snap.assume(share.key, snap.index["c"], gs.demand_with(share, (0,)), None)
    assert gs.view_of(snap, everyone).free.tolist() == afresh()
    assert gs.view_of(snap, np.array([snap.index["c"]], dtype=np.intp)).free.tolist() == [[500]]
    snap.restore(mark)
    assert gs.view_of(snap, everyone).free.tolist() == kept == afresh()


def test_a_state_version_of_the_device_table_stands_for_one_node_state() -> None:
    """``GpuView.ver``: a node logged since gets a new version, a rebuilt table (a new epoch)
    keeps the versions of the nodes whose state is unchanged, and one version is never seen
    with two states (FGD's memo trusts it)."""
    sim = Sim()
    sim.apply(gnode("a", 2), gnode("b", 4, model="T4"), gnode("c", 1))
    snap = sim.s.state.podsched.snap
    everyone = np.arange(snap.n, dtype=np.intp)
    seen: dict[int, tuple[list[int], int, int]] = {}

    def versions() -> list[int]:
        v = gs.view_of(snap, everyone)
        assert v.ver is not None
        for i, ver in enumerate(v.ver.tolist()):
            state = (v.free[i].tolist(), int(v.cpu[i]), int(v.mid[i]))
            assert seen.setdefault(ver, state) == state
        return v.ver.tolist()

    first = versions()
    sim.apply(gpod("p", 300))
    after = versions()
    moved = [i for i in range(snap.n) if after[i] != first[i]]
    assert [snap.names[i] for i in moved] == [binds(sim)["default/p"][0]]
    snap.epoch += 1  # as when the change log overflows: the table is read afresh
    assert versions() == after
    sim.delete("Pod", "default/p")
    versions()
