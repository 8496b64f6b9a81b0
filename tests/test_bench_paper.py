"""The FGD paper's protocol (bench/paper.py): the tuning, and a 1-seed, 1,000-pod smoke run of FGD
through the real ledger whose every placement ``replay --verify`` reproduces. The trace is read
in place (``PODLEDGER_TRACE_DIR`` or ``../shared/data/openb``); without it the smoke run skips."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import paper, paper_core
from bench import paper_protocol as pp
from scheduler import gpushare as gs


def _task(name: str, gpus: int, milli: int) -> paper.Task:
    return paper.Task(name, 1000, 1024, gpus, milli, ())


def test_tune_inflates_or_prunes_to_1_3x_capacity_per_seed() -> None:
    tasks = [_task(f"t{i}", 1, 500) for i in range(10)] + [_task("c", 0, 0)]
    cap = 4000  # 4 GPUs: 5,200 milli wanted, the list has 5,000
    big = paper.tune(tasks, cap, 42)
    assert sum(t.gpu_milli for t in big) >= 1.3 * cap > sum(t.gpu_milli for t in big) - 500
    assert len({t.name for t in big}) == len(big)  # copies are renamed
    assert [t.name for t in paper.tune(tasks, cap, 42)] == [t.name for t in big]  # per seed
    assert [t.name for t in paper.tune(tasks, cap, 43)] != [t.name for t in big]
    small = paper.tune(tasks, 2000, 42)  # 2,600 wanted: pruned
    assert 2600 <= sum(t.gpu_milli for t in small) < 3100


def test_manifests_follow_the_gpu_share_convention() -> None:
    share = paper.pod_manifest(paper.Task("P-1", 4000, 2048, 1, 460, ("T4", "P100")))
    assert share["metadata"]["annotations"] == {
        gs.GPU_MILLI: "460",
        gs.GPU_COUNT: "1",
        gs.GPU_MODEL: "T4|P100",
    }
    term = share["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["T4", "P100"]
    assert "annotations" not in paper.pod_manifest(_task("cpu", 0, 0))["metadata"]
    node = paper.node_manifest(
        {"sn": "n", "cpu_milli": "96000", "memory_mib": "1024", "gpu": "8", "model": "V100M16"}
    )
    assert node["status"]["capacity"][gs.NVIDIA_GPU] == "8"
    assert node["metadata"]["labels"] == {gs.GPU_MODEL: "V100M16"}


def _row(i: int) -> dict[str, str]:
    return {
        "sn": f"openb-node-{i:04d}",
        "cpu_milli": "32000",
        "memory_mib": "65536",
        "gpu": "2",
        "model": "T4",
    }


def test_artifact_node_order_renames_with_a_per_seed_permutation() -> None:
    rows = [_row(i) for i in (3, 0, 2, 1, 4)]  # file order is not name order
    named = pp.ordered_nodes(rows, 42, "artifact")
    names = [n for n, _ in named]
    assert names == sorted(names)  # appended in name order: lowest index = smallest name
    assert sorted(n[:4] for n in names) == ["0000", "0001", "0002", "0003", "0004"]
    # the node at sorted trace position i gets the prefix perm[i], its row kept alongside
    perm = pp.node_permutation(5, 42)
    assert {n: r["sn"] for n, r in named} == {
        f"{perm[i]:04d}-openb-node-{i:04d}": f"openb-node-{i:04d}" for i in range(5)
    }
    assert pp.ordered_nodes(rows, 42, "artifact") == named  # deterministic per seed
    assert len({tuple(r["sn"] for _, r in pp.ordered_nodes(rows, s, "artifact")) for s in range(42, 52)}) > 1
    assert [n for n, _ in pp.ordered_nodes(rows, 42, "index")] == [r["sn"] for r in rows]
    with pytest.raises(ValueError):
        pp.ordered_nodes(rows, 42, "name")
    node = paper.node_manifest(named[0][1], named[0][0])
    assert node["metadata"]["name"] == names[0]
    assert node["metadata"]["annotations"] == {pp.TRACE_NODE: named[0][1]["sn"]}
    assert "annotations" not in paper.node_manifest(rows[0])["metadata"]


@pytest.mark.parametrize("policy", ["GpuClustering", "BestFit", "FGD"])
def test_equal_scores_go_to_the_smallest_artifact_name(policy: str) -> None:
    """Identical idle nodes score the same: the scheduler's own tie-break (lowest index) picks the
    smallest renamed node, i.e. the artifact's per-seed order, not the file's first node."""
    rows = [_row(i) for i in range(8)]
    task = paper.Task("p-0", 1000, 1024, 1, 500, ("T4",))
    picked = {}
    for seed in (42, 43, 44):
        sch = paper_core.core_scheduler(rows, [task], policy, seed, "artifact")
        sch.run_until_idle(0.0, max_cycles=10)
        node = sch.pod(f"{paper.NAMESPACE}/p-0").node_name
        assert node == min(n for n, _ in pp.ordered_nodes(rows, seed, "artifact")) and node.startswith(
            "0000-"
        )
        picked[seed] = node[5:]
    assert len(set(picked.values())) > 1  # another seed, another node
    sch = paper_core.core_scheduler(rows, [task], policy, 42, "index")
    sch.run_until_idle(0.0, max_cycles=10)
    assert sch.pod(f"{paper.NAMESPACE}/p-0").node_name == "openb-node-0000"


@pytest.mark.slow
def test_smoke_run_fgd_1000_pods_is_verified(server_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = paper.trace_dir()
    if not (folder / paper.NODE_FILE).is_file():
        pytest.skip(f"no openb trace at {folder}")
    monkeypatch.setenv("PODLEDGER_DATABASE_URL", server_url)
    r = paper.run_one(folder, "default", "FGD", 42, limit=1000, verify=True)
    assert r.verified == "ok"
    assert r.pods == 1000 and 0 < r.bound <= 1000
    # every share pod holds one device, no device is over-committed
    tasks = {
        f"{paper.NAMESPACE}/{t.name.lower()}": t
        for t in paper.tune(paper.read_tasks(folder, "default"), 6212 * 1000, 42, 1000)
    }
    used: dict[tuple[str, int], int] = {}
    for key, (node, devs) in r.placements.items():
        t = tasks[key]
        assert len(devs) == (t.count if t.milli > 0 else 0), key
        for dv in devs:
            used[(node, dv)] = used.get((node, dv), 0) + t.milli
    assert used and max(used.values()) <= 1000
    # the ledger's nodes are the artifact's renamed nodes (seed 42); the trace name is kept
    named = dict(pp.ordered_nodes(paper.read_nodes(folder), 42, "artifact"))
    assert all(n[:4].isdigit() and n[4] == "-" and n.endswith(named[n]["sn"]) for n in named)
    assert all(dv < int(named[n]["gpu"]) for n, dv in used)
    assert r.node_order == "artifact" and len(r.digest) == 16


@pytest.mark.slow
def test_whatif_fgd_over_a_recorded_bestfit_run(server_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``replay --config FGD --diff`` over a BestFit run: per pod the placement FGD gives (the
    same as an FGD run of the same pods), per node the pods and GPUs that moved."""
    from api.services.placement_diff import render
    from api.services.whatif import whatif

    folder = paper.trace_dir()
    if not (folder / paper.NODE_FILE).is_file():
        pytest.skip(f"no openb trace at {folder}")
    monkeypatch.setenv("PODLEDGER_DATABASE_URL", server_url)
    fgd_cfg = {"pluginWeights": {"FGD": 1}, "preemptionAlgorithm": "None"}
    best = paper.run_one(
        folder, "default", "BestFit", 42, limit=400, inspect=lambda database: whatif(database, fgd_cfg)
    )
    fgd_run = paper.run_one(folder, "default", "FGD", 42, limit=400)
    d = best.inspected["placements"]
    moved = {r["pod"]: r for r in d["pods"]}
    assert moved, "FGD and BestFit place these 400 pods differently"
    for key, (node, devs) in fgd_run.placements.items():  # what-if == a real FGD run
        want = best.placements.get(key)
        if (node, devs) == want:
            assert key not in moved
        else:
            assert moved[key]["after"] == {"node": node, "gpus": list(devs)}
            assert moved[key]["before"] == (
                None if want is None else {"node": want[0], "gpus": list(want[1])}
            )
    tasks = {
        f"{paper.NAMESPACE}/{t.name.lower()}": t
        for t in paper.tune(paper.read_tasks(folder, "default"), 6212 * 1000, 42, 400)
    }
    milli = {
        side: sum(tasks[k].gpu_milli for k in r.placements)
        for side, r in (("before", best), ("after", fgd_run))
    }
    assert d["gpuMilli"] == {**milli, "extra": milli["after"] - milli["before"]}
    assert d["bound"] == {"before": best.bound, "after": fgd_run.bound}
    for n in d["nodes"]:  # per node: pods and GPUs before/after add up from the per-pod rows
        ins = [moved[k] for k in n["podsIn"]]
        outs = [moved[k] for k in n["podsOut"]]
        assert all(r["after"]["node"] == n["node"] for r in ins) and all(
            r["before"]["node"] == n["node"] for r in outs
        )
        assert n["gpuMilliDelta"] == sum(r["gpuMilli"] for r in ins) - sum(r["gpuMilli"] for r in outs)
    text = render(d, limit=3)
    assert text[0].startswith(f"placements: {len(d['pods'])} pod(s) placed differently")


def test_traces_all_is_the_artifacts_17_lists() -> None:
    assert paper.parse_traces("all") == paper.ALL_TRACES and len(paper.ALL_TRACES) == 17
    assert paper.parse_traces("default,cpu050") == ("default", "cpu050")
    with pytest.raises(SystemExit):
        paper.parse_traces("default,cpu300")
    # one seed verified whole, the others sampled (the same sample on every rerun)
    assert all(paper.verified_run(t, "FGD", 42, 42, 6) for t in paper.ALL_TRACES)
    sample = [paper.verified_run(t, p, 43, 42, 6) for t in paper.ALL_TRACES for p in paper.POLICIES]
    assert 0 < sum(sample) < len(sample)
    assert sample == [paper.verified_run(t, p, 43, 42, 6) for t in paper.ALL_TRACES for p in paper.POLICIES]


@pytest.mark.slow
def test_smoke_variant_list_cells_with_digests(
    server_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``bench.paper`` end to end on two variant lists (first 150 pods, two policies, one seed) in
    two processes (``--jobs 2``, a list's runs in one of them): every run verified by replay, every (list,
    policy, X) cell written with each run's digest, the reported placements read from the
    ledger's views; ``--merge`` of the run file gives the same cells."""
    folder = paper.trace_dir()
    if not (folder / paper.NODE_FILE).is_file():
        pytest.skip(f"no openb trace at {folder}")
    monkeypatch.setenv("PODLEDGER_DATABASE_URL", server_url)
    runs, results = tmp_path / "runs.json", tmp_path / "paper.json"
    lists = ("multigpu20", "cpu050")
    args = ["--traces", ",".join(lists), "--policies", "BestFit,FGD", "--seeds", "1", "--limit", "150"]
    paper.main([*args, "--jobs", "2", "--x", "1,2", "--out", str(runs), "--results", str(results)])
    rows = json.loads(runs.read_text())
    assert sorted((r["trace"], r["policy"], r["seed"], r["verified"]) for r in rows) == sorted(
        (t, p, 42, "ok") for t in lists for p in ("BestFit", "FGD")
    )
    assert all(r["pods"] == 150 and 0 < r["bound"] <= 150 and len(r["digest"]) == 16 for r in rows)
    parts = [tmp_path / f"runs.shard{k}.json" for k in (0, 1)]
    shards = [{(r["trace"], r["policy"]) for r in json.loads(f.read_text())} for f in parts if f.is_file()]
    assert sorted(x for part in shards for x in part) == sorted(
        (t, p) for t in lists for p in ("BestFit", "FGD")
    )
    for t in lists:  # a list's runs stay together (they share its inputs ledger)
        holders = [part for part in shards if any(tr == t for tr, _ in part)]
        assert len(holders) == 1 and {(t, "BestFit"), (t, "FGD")} <= holders[0]
    doc = json.loads(results.read_text())
    cells = {(c["list"], c["policy"], c["x"]): c for c in doc["cells"]}
    assert set(cells) == {(t, p, x) for t in lists for p in ("BestFit", "FGD") for x in (1, 2)}
    for (trace, policy, x), c in cells.items():
        run = next(r for r in rows if r["policy"] == policy and r["trace"] == trace)
        assert c["runs"] == [
            {"seed": 42, "value": round(run["alloc"][x], 3), "digest": run["digest"], "verified": "ok"}
        ]
    merged = tmp_path / "merged.json"
    paper.main(["--merge", str(runs), "--x", "1,2", "--results", str(merged)])
    assert json.loads(merged.read_text())["cells"] == doc["cells"]


def test_family_tables_flag_cells_outside_sd_plus_half_point() -> None:
    """The docs' tables: ours / published (sd) per policy and variant, **NO** beyond sd + 0.5 pp."""
    from bench import paper_figures as pf
    from bench.paper_published import ALLOC

    def run(trace: str, policy: str, value: float) -> paper.Run:
        return paper.Run(trace, policy, 42, alloc=[value] * 131)

    pub = ALLOC[("gpushare40", "FGD")][100]
    runs = [run("gpushare40", "FGD", pub[0] + pub[1] + 0.4), run("gpushare60", "FGD", 50.0)]
    text = pf.family_tables(runs)
    row = next(line for line in text.splitlines() if line.startswith("| FGD | ") and "gpushare" not in line)
    cells = row.split(" | ")
    assert "**NO**" not in cells[1] and "**NO**" in cells[2] and cells[3] == "-"
    assert pf.variant_value("multigpu50") == 50 and pf.variant_value("cpu050") == 50
    assert set(ALLOC) >= {(t, p) for t in paper.ALL_TRACES for p in paper.POLICIES}  # 17 x 6 published


def test_frag_table_compares_the_published_points_within_one_point() -> None:
    """The fragmentation table: ours every 10 % of X, the published X = 50/80 beside it, **NO**
    beyond 1 pp."""
    from bench import paper_figures as pf
    from bench.paper_published import FRAG_RATIO

    pub50, pub80 = FRAG_RATIO[("FGD", 50)][0], FRAG_RATIO[("FGD", 80)][0]
    frag = {x: (0.0, float(x) / 2) for x in range(5, 131, 5)} | {
        50: (0.0, pub50 + 0.9),
        80: (0.0, pub80 - 1.2),
    }
    text = pf.frag_table([paper.Run("default", "FGD", 42, frag=frag)])
    rows = {line.split(" | ")[0]: line.removesuffix(" |").split(" | ") for line in text.splitlines()[2:]}
    fgd = 1 + pf.POLICIES.index("FGD")
    assert "| 50" in rows and "**NO**" not in rows["| 50"][fgd] and "**NO**" in rows["| 80"][fgd]
    assert rows["| 10"][fgd] == "5.0" and rows["| 10"][1] == "-" and "| 15" not in rows


def test_jobs_take_whole_list_and_seed_groups_longest_first(tmp_path: Path) -> None:
    """``--jobs``: a (pod list, seed) group's runs stay in one process (they share its inputs
    ledger) with their verification flags; the groups come longest first, and each is taken by
    exactly one process (claims made with O_EXCL), whatever the order processes ask in."""
    from bench.paper_jobs import claimed_groups, group_plan, unclaimed

    combos = [
        (t, p, s) for s in (42, 43) for t in ("default", "cpu050", "multigpu20") for p in ("BestFit", "FGD")
    ]
    verify = [s == 42 for _, _, s in combos]
    pods = {"default": 10772, "cpu050": 9811, "multigpu20": 9450}
    plan = group_plan(combos, verify, lambda t, s, v: pods[t] * (len(v) + sum(v)))
    assert [(g[0][0], g[0][2]) for g in plan] == [
        ("default", 42),
        ("cpu050", 42),
        ("multigpu20", 42),
        ("default", 43),
        ("cpu050", 43),
        ("multigpu20", 43),
    ]
    assert sorted(tuple(r[:3]) for g in plan for r in g) == sorted(combos)
    assert all(
        len({(t, s) for t, _, s, _ in g}) == 1 and all(v == (s == 42) for _, _, s, v in g) for g in plan
    )
    first, second = claimed_groups(plan, tmp_path), claimed_groups(plan, tmp_path)
    taken = [next(first)[0], next(second)[0], next(second)[0], next(first)[0]]
    assert taken == [0, 1, 2, 3] and unclaimed(plan, tmp_path) == [4, 5]
    assert [i for i, _ in first] == [4, 5] and list(second) == [] and unclaimed(plan, tmp_path) == []
