"""The FGD paper's experiment through podledger (``python -m bench.paper``, ``make paper``).

Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation
Gradient Descent", USENIX ATC '23; protocol and published numbers: ``docs/paper.md``. The trace
is read from ``PODLEDGER_TRACE_DIR`` (default ``../shared/data/openb``), never copied here.

One run = one pod list x one policy x one seed, a private ledger database of its own:

* nodes: the trace's GPU nodes (``openb_node_list_gpu_node.csv``): ``cpu``, ``memory``,
  ``nvidia.com/gpu`` and the label ``alibabacloud.com/gpu-card-model``; with ``--node-order
  artifact`` (default) renamed ``%04d-<name>`` from a per-seed permutation and appended in name
  order, so equal scores go to the artifact's per-seed random node order
  (``bench/paper_protocol.py``); ``index``: trace names, file order;
* workload: the pod list shuffled with the seed, then inflated (tasks drawn again, with
  replacement, as copies ``<name>-c<k>``) or pruned until its GPU request reaches 1.3 x the
  cluster's GPUs; GPU tasks carry the GPU-share annotations (``alibabacloud.com/gpu-milli``,
  ``gpu-count``, ``gpu-card-model``) and their model list as a required node affinity;
* the SchedulerConfig ``pluginWeights: {<policy>: 1}``; all inputs appended in one request,
  then ``Bridge.run_until_idle`` schedules the pods one by one in arrival order (equal
  priority, one timestamp: the queue's order is the append order); a pod that fits nowhere is
  never retried into a fit (nothing is ever deleted) and stays failed;
* allocation ratio at X: bound GPU milli / capacity after the first pods whose cumulative GPU
  request reaches X % of capacity, X = 0..130; fragmentation (FGD's measure over the
  workload's typical pods) at X = 50 and 80, as amount (GPUs) and ratio (of the free GPUs);
* ``replay --verify`` (the audit's ``verify_replay``) on every run of the first seed.

Writes ``bench/results/paper.json`` (one metric per pod list, policy and X in {90, 100, 130}:
value = our mean over seeds, baseline = the published mean where transcribed) and
``docs/paper-alloc.png`` (with the ``paper`` extra: matplotlib).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import Metric
from bench.openb import DEFAULT_TRACE_DIR
from bench.paper_cells import cells, count_within, write_results
from bench.paper_core import core_cpu
from bench.paper_figures import family_tables, frag_table, plot, plot_families, plot_frag, ranking_lines
from bench.paper_jobs import claimed_groups, group_plan, run_shards, unclaimed, write_runs
from bench.paper_protocol import (
    DEFAULT_NODE_ORDER,
    NAMESPACE,
    NODE_ORDERS,
    config_manifest,
    frag_at,
    node_manifest,
    ordered_nodes,
    pod_manifest,
)
from bench.paper_published import ALL_TRACES, ALLOC, FRAG_RATIO
from bench.paper_report import load_runs, tables
from scheduler import gpushare as gs

ROOT = Path(__file__).resolve().parent.parent
NODE_FILE = "openb_node_list_gpu_node.csv"
TRACES = ("default", "gpuspec33", "multigpu50")
POLICIES = ("Random", "DotProduct", "GpuClustering", "GpuPacking", "BestFit", "FGD")
SEED0 = 42
TUNE = 1.3
X_REPORTED = (90, 100, 130)
RANK_X = 100
FRAG_X = (50, 80)
FRAG_CURVE_TRACES = ("default",)
FRAG_CURVE_STEP = 5
EST_RUN_S = 5.5  # wall per run of the default list, idle machine (ETA only; docs/paper.md "Cost of a run")
EST_VERIFY_S = 1.5
EST_PODS = 10_772  # the default list's pods once tuned: a run's cost grows with its pods
# wall-clock speed-up of --jobs N over one process (whole runs side by side, the database's work
# included), measured on the 2-core machine: docs/paper.md "Cost of a run"
JOBS_SPEEDUP = {2: 1.8}
# published means / sd (n-1) of the simulator's expected results (bench/paper_published.py)
PUBLISHED: dict[tuple[str, str, int], tuple[float, float]] = {
    (trace, policy, x): v for (trace, policy), xs in ALLOC.items() for x, v in xs.items()
}


@dataclass(frozen=True, slots=True)
class Task:
    name: str
    cpu: int
    mem: int
    count: int
    milli: int  # per GPU
    spec: tuple[str, ...]

    @property
    def gpu_milli(self) -> int:
        return self.count * self.milli if self.count > 0 else 0


@dataclass
class Run:
    trace: str
    policy: str
    seed: int
    pods: int = 0
    bound: int = 0
    wall_s: float = 0.0
    cpu_s: float = 0.0  # this process's CPU time in the run (the database's not counted)
    verify_cpu_s: float = 0.0  # this process's CPU time in replay --verify
    alloc: list[float] = field(default_factory=list)  # % at X = 0..130
    frag: dict[int, tuple[float, float]] = field(default_factory=dict)  # X -> (GPUs, ratio %)
    verified: str = ""
    node_order: str = DEFAULT_NODE_ORDER
    digest: str = ""  # sha256 of the sorted placements (pod -> node, devices): equal runs, equal digest
    placements: dict[str, tuple[str, tuple[int, ...]]] = field(default_factory=dict)  # not written
    inspected: Any = None  # not written


def trace_dir() -> Path:
    """``PODLEDGER_TRACE_DIR``, else ``../shared/data/openb`` (``../../`` from a worktree)."""
    env = os.environ.get("PODLEDGER_TRACE_DIR")
    if env:
        return Path(env)
    for cand in (DEFAULT_TRACE_DIR, ROOT.parent.parent / "shared" / "data" / "openb"):
        if (cand / NODE_FILE).is_file():
            return cand
    return DEFAULT_TRACE_DIR


def read_nodes(folder: Path) -> list[dict[str, Any]]:
    with (folder / NODE_FILE).open(newline="") as fh:
        return [r for r in csv.DictReader(fh) if int(r["gpu"] or 0) > 0]


def read_tasks(folder: Path, trace: str) -> list[Task]:
    out: list[Task] = []
    with (folder / f"openb_pod_list_{trace}.csv").open(newline="") as fh:
        for r in csv.DictReader(fh):
            count = int(r["num_gpu"] or 0)
            milli = int(r["gpu_milli"] or 0) if count == 1 else (1000 if count > 0 else 0)
            spec = tuple(s.strip() for s in (r.get("gpu_spec") or "").split("|") if s.strip())
            out.append(Task(r["name"], int(r["cpu_milli"]), int(r["memory_mib"]), count, milli, spec))
    return out


def tune(tasks: list[Task], capacity_milli: int, seed: int, limit: int | None = None) -> list[Task]:
    """Shuffle, then inflate (draws with replacement) or prune to ``TUNE`` x capacity."""
    rng = random.Random(seed)
    order = tasks[:]
    rng.shuffle(order)
    target = TUNE * capacity_milli
    out: list[Task] = []
    total = 0
    for t in order:
        if total >= target:
            break
        out.append(t)
        total += t.gpu_milli
    copies: dict[str, int] = {}
    while total < target:
        t = rng.choice(tasks)
        k = copies[t.name] = copies.get(t.name, 0) + 1
        out.append(Task(f"{t.name}-c{k}", t.cpu, t.mem, t.count, t.milli, t.spec))
        total += t.gpu_milli
    rng.shuffle(out)
    return out[:limit] if limit is not None else out


def run_one(
    folder: Path,
    trace: str,
    policy: str,
    seed: int,
    limit: int | None = None,
    verify: bool = False,
    inspect: Callable[[Any], Any] | None = None,
    node_order: str = DEFAULT_NODE_ORDER,
) -> Run:
    """One run in a private ledger; ``inspect(database)``, when given, runs on the ledger before
    it is dropped (its result in ``Run.inspected``). Placements name the ledger's nodes."""
    from bench.openb import load
    from bench.paper_ledger import placements_from_views, run_ledger
    from bench.writes import apply
    from scheduler import decisions as d
    from scheduler.edge.bridge import Bridge, from_ts

    nodes = read_nodes(folder)
    capacity = sum(int(r["gpu"]) for r in nodes) * gs.MILLI
    tasks = tune(read_tasks(folder, trace), capacity, seed, limit)
    named = ordered_nodes(nodes, seed, node_order)
    out = Run(trace, policy, seed, pods=len(tasks), node_order=node_order)
    t0, c0 = time.perf_counter(), time.process_time()
    now = 1767225600.0  # 2026-01-01T00:00:00Z
    inputs = [node_manifest(r, nm) for nm, r in named] + [pod_manifest(t) for t in tasks]

    def build(database: Any) -> None:
        objects = load(inputs, f"paper {trace} seed {seed}")
        res = apply(database, objects, actor="paper", source="paper", effective_at=from_ts(now))
        if not res.ok:
            raise RuntimeError(f"apply refused: {res.errors[:3]}")

    key = (str(folder), trace, seed, limit, node_order)
    with run_ledger(key, build) as database:
        cfg = load([config_manifest(policy)], f"paper {trace} {policy} seed {seed}")
        res = apply(database, cfg, actor="paper", source="paper", effective_at=from_ts(now))
        if not res.ok:
            raise RuntimeError(f"apply refused: {res.errors[:3]}")
        bridge = Bridge(database, actor="paper")
        decided: dict[str, tuple[str, tuple[int, ...]]] = {}
        for r in bridge.run_until_idle(now):
            for dec in r.decisions:
                if isinstance(dec, d.PodBound):
                    decided[dec.pod] = (dec.node, dec.gpus or ())
        # what is reported comes from the ledger's views, checked against the decisions made
        placed = placements_from_views(database, NAMESPACE)
        if placed != decided:
            diff = sorted(set(placed.items()) ^ set(decided.items()))[:3]
            raise RuntimeError(
                f"{trace} {policy} seed {seed}: ledger views differ from the decisions: {diff}"
            )
        out.wall_s = time.perf_counter() - t0
        out.cpu_s = time.process_time() - c0
        out.bound = len(placed)
        out.placements = placed
        out.digest = hashlib.sha256(json.dumps(sorted(placed.items())).encode()).hexdigest()[:16]
        typical = bridge.scheduler.state.podsched.workload.typical()
        if verify:
            from api.services.replay import verify_replay

            cv = time.process_time()
            rep = verify_replay(database)
            out.verify_cpu_s = time.process_time() - cv
            out.verified = "ok" if not rep.mismatches else f"{len(rep.mismatches)} mismatches"
        if inspect is not None:
            out.inspected = inspect(database)
    # allocation and fragmentation curves over arrivals
    cum = alloc = 0
    xs: list[float] = []
    done: list[tuple[Task, str, tuple[int, ...]]] = []
    # FGD's fragmentation at X = 50 and 80 (the published points); for the default list every 5 %
    # of arrived demand (the paper's fragmentation-vs-demand figure)
    frag_x = set(FRAG_X) | (set(range(0, 131, FRAG_CURVE_STEP)) if trace in FRAG_CURVE_TRACES else set())
    for t in tasks:
        cum += t.gpu_milli
        p = placed.get(f"{NAMESPACE}/{t.name.lower()}")
        if p is not None:
            alloc += t.gpu_milli
            done.append((t, p[0], p[1]))
        x = 100 * cum / capacity
        while len(xs) <= 130 and x >= len(xs):
            xs.append(100 * alloc / capacity)
            if len(xs) - 1 in frag_x:
                out.frag[len(xs) - 1] = frag_at(named, done, typical)
    out.alloc = xs
    return out


def _close(name: str, mean: float, n: int, pub: tuple[float, float] | None, unit: str, pp: float) -> Metric:
    if pub is None:
        return Metric(name, round(mean, 2), unit, goal=f"{n} seed(s); no published value")
    return Metric(
        name,
        round(mean, 2),
        unit,
        f"published mean ({n} seed(s) here)",
        pub[0],
        round(mean / pub[0], 4) if pub[0] else None,
        f"within sd {pub[1]} + {pp} pp" if pub[1] else f"within {pp} pp",
        abs(mean - pub[0]) <= pub[1] + pp,
    )


def ranking(means: dict[str, float]) -> str:
    return " < ".join(sorted(means, key=lambda p: (means[p], p)))


def summarize(runs: list[Run]) -> list[Metric]:
    metrics: list[Metric] = []
    for trace in [t for t in ALL_TRACES if any(r.trace == t for r in runs)]:
        ours: dict[str, float] = {}
        for policy in POLICIES:
            rs = [r for r in runs if r.trace == trace and r.policy == policy and len(r.alloc) > 130]
            if not rs:
                continue
            for x in X_REPORTED:
                mean = statistics.mean(r.alloc[x] for r in rs)
                if x == RANK_X:
                    ours[policy] = mean
                name = f"paper.{trace}.{policy}.alloc_x{x}"
                metrics.append(_close(name, mean, len(rs), PUBLISHED.get((trace, policy, x)), "%", 0.5))
            if trace == "default":
                for x in FRAG_X:
                    vals = [r.frag[x][1] for r in rs if x in r.frag]
                    if vals:
                        name = f"paper.{trace}.{policy}.frag_ratio_x{x}"
                        pub = FRAG_RATIO.get((policy, x))
                        metrics.append(
                            _close(name, statistics.mean(vals), len(vals), pub and (pub[0], 0.0), "%", 1.0)
                        )
        if len(ours) == len(POLICIES) and all((trace, p) in ALLOC for p in POLICIES):
            pub_rank = ranking({p: ALLOC[(trace, p)][RANK_X][0] for p in POLICIES})
            same = ranking(ours) == pub_rank
            metrics.append(
                Metric(
                    f"paper.{trace}.ranking_x{RANK_X}",
                    1.0 if same else 0.0,
                    "same order",
                    f"published: {pub_rank}",
                    1.0,
                    1.0 if same else 0.0,
                    f"ours: {ranking(ours)}",
                    same,
                )
            )
    walls = [r.wall_s for r in runs if r.pods > 10_000]
    if walls:
        metrics.append(
            Metric(
                "paper.run_wall_max",
                round(max(walls), 1),
                "s",
                goal="<= 60 s per run (~10.8k pods)",
                met=max(walls) <= 60,
            )
        )
    return metrics


def parse_traces(text: str) -> tuple[str, ...]:
    """``all`` or a comma-separated list of the artifact's pod lists (``ALL_TRACES``)."""
    if text.strip() == "all":
        return ALL_TRACES
    out = tuple(t.strip() for t in text.split(",") if t.strip())
    bad = [t for t in out if t not in ALL_TRACES]
    if bad or not out:
        raise SystemExit(
            f"--traces: unknown pod list(s) {bad or [text]}; one of: all, {', '.join(ALL_TRACES)}"
        )
    return out


def verified_run(trace: str, policy: str, seed: int, verify_seed: int, every: int) -> bool:
    """Every run of ``verify_seed``; of the other seeds one run in ``every`` (a fixed sample: a
    hash of the run's key, so a rerun verifies the same runs; ``every <= 0``: none)."""
    if seed == verify_seed:
        return True
    if every <= 0:
        return False
    return int(hashlib.sha256(f"{trace}/{policy}/{seed}".encode()).hexdigest(), 16) % every == 0


def _group_cost(folder: Path, limit: int | None) -> Callable[[str, int, list[bool]], float]:
    """A (pod list, seed) group's estimated wall seconds on an idle machine: its runs at
    ``EST_RUN_S`` (plus ``EST_VERIFY_S`` per verified run) scaled by the list's pods once tuned
    (``EST_PODS`` for the default list)."""
    capacity = sum(int(r["gpu"]) for r in read_nodes(folder)) * gs.MILLI
    pods: dict[tuple[str, int], int] = {}

    def cost(trace: str, seed: int, verify: list[bool]) -> float:
        if (trace, seed) not in pods:
            pods[(trace, seed)] = len(tune(read_tasks(folder, trace), capacity, seed, limit))
        return (len(verify) * EST_RUN_S + sum(verify) * EST_VERIFY_S) * pods[(trace, seed)] / EST_PODS

    return cost


def _eta_line(combos: list[tuple[str, str, int]], verify: list[bool], jobs: int, runs_s: float) -> str:
    """The first line a study prints: its runs, and ``runs_s`` (their estimated seconds in one
    process, ``_group_cost``) over ``jobs`` processes."""
    per = JOBS_SPEEDUP.get(jobs, JOBS_SPEEDUP[max(JOBS_SPEEDUP)]) if jobs > 1 else 1.0
    return (
        f"paper: {len(combos)} run(s) ({sum(verify)} verified), {len({c[0] for c in combos})} pod list(s), "
        f"{jobs} process(es); ETA ~{runs_s / per / 60:.0f} min on an idle 2-core machine "
        f"({EST_RUN_S:.1f} s per run of {EST_PODS:,} pods, +{EST_VERIFY_S:.1f} s per verification"
        f"{f', {per:.1f}x with {jobs} processes' if jobs > 1 else ''}; more under load)"
    )


def report(
    runs: list[Run], results: Path, policies: tuple[str, ...] = POLICIES, xs: tuple[int, ...] = X_REPORTED
) -> None:
    """Write ``results`` (metrics and every cell), plot, print the summary and the tables."""
    metrics = summarize(runs)
    traces = tuple(t for t in ALL_TRACES if any(r.trace == t for r in runs))
    cs = cells(runs, traces, policies, xs)
    write_results(results, metrics, cs)
    within, compared, total = count_within(cs)
    print(f"{within} of {compared} compared allocation cells within sd + 0.5 pp ({total} cells)")
    for m in metrics:
        if m.name.endswith(f"ranking_x{RANK_X}"):
            print(f"{m.name}: {'same' if m.met else 'DIFFERENT'} ({m.baseline}; {m.goal})")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--seed0", type=int, default=SEED0, help="first seed (the artifact's: 42)")
    ap.add_argument(
        "--traces", default=",".join(TRACES), help="'all' or a comma-separated subset of the 17 lists"
    )
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--limit", type=int, default=None, help="first N pods of each workload (smoke)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "paper-runs.json"))
    ap.add_argument(
        "--results", default=None, help="cells file (default bench/results/paper.json; none with --limit)"
    )
    ap.add_argument("--x", default="90,100,130", help="arrived demand X (%%) of the cells written")
    ap.add_argument("--verify-seed", type=int, default=SEED0, help="every run of this seed is verified")
    ap.add_argument("--verify-every", type=int, default=6, help="of the other seeds' runs verify 1 in N")
    ap.add_argument("--core", action="store_true", help="only the scheduling CPU per policy (no database)")
    ap.add_argument(
        "--node-order",
        choices=NODE_ORDERS,
        default=DEFAULT_NODE_ORDER,
        help="equal scores: the artifact's per-seed random node order (default) or the trace's file order",
    )
    ap.add_argument("--resume", action="store_true", help="keep the runs already in --out, run the rest")
    ap.add_argument("--merge", default="", help="comma-separated run files: only summarize and plot them")
    ap.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="processes running (pod list, seed) groups side by side (2 cores: 2)",
    )
    ap.add_argument("--plan", default="", help=argparse.SUPPRESS)  # a --jobs shard's runs
    ap.add_argument("--shard", default="", help=argparse.SUPPRESS)  # "k/N", for its progress lines
    ap.add_argument("--claims", default="", help=argparse.SUPPRESS)  # where --jobs processes claim groups
    args = ap.parse_args(argv)
    results = Path(args.results) if args.results else ROOT / "bench" / "results" / "paper.json"
    if args.merge:
        merged: list[Run] = load_runs(args.merge.split(","), Run)
        report(merged, results, xs=tuple(int(x) for x in args.x.split(",")))
        present = tuple(t for t in ALL_TRACES if any(r.trace == t for r in merged))
        if not args.results:
            plot(merged, ROOT / "docs" / "paper-alloc.png")
            plot_families(merged, ROOT / "docs" / "paper-families.png")
            plot_frag(merged, ROOT / "docs" / "paper-frag.png")
        print(tables(merged, present, POLICIES))
        print(family_tables(merged))
        print(frag_table(merged))
        print()
        print(ranking_lines(merged, present))
        return
    traces = parse_traces(args.traces)
    policies = tuple(p.strip() for p in args.policies.split(",") if p.strip())
    folder = trace_dir()
    if not (folder / NODE_FILE).is_file():
        print(f"paper: no trace at {folder}; skipped")
        return
    if args.core:
        for tr in traces:
            for po in policies:
                bound, cpu = core_cpu(folder, tr, po, args.seed0, args.limit, args.node_order)
                print(
                    f"core {tr} {po} seed {args.seed0}: {bound} bound, scheduling CPU {cpu:.1f} s", flush=True
                )
        return
    if args.plan:  # one of a --jobs run's processes: the plan's groups nobody else has taken
        _run_claimed(args, folder, json.loads(Path(args.plan).read_text()), Path(args.claims))
        return
    combos = [(tr, po, args.seed0 + s) for s in range(args.seeds) for tr in traces for po in policies]
    runs: list[Run] = []
    if args.resume and Path(args.out).is_file():  # keep the runs already in --out, run the others
        runs = load_runs([args.out], Run)
        have = {(r.trace, r.policy, r.seed) for r in runs if r.node_order == args.node_order}
        combos = [c for c in combos if c not in have]
    verify = [verified_run(tr, po, seed, args.verify_seed, args.verify_every) for tr, po, seed in combos]
    jobs = max(1, min(args.jobs, len({(tr, seed) for tr, _, seed in combos}) or 1))
    cost = _group_cost(folder, args.limit)
    plan = group_plan(combos, verify, cost)
    runs_s = sum(cost(g[0][0], int(g[0][2]), [bool(r[3]) for r in g]) for g in plan)
    print(_eta_line(combos, verify, jobs, runs_s), flush=True)
    if jobs > 1:
        runs += run_shards(args, plan, jobs, Run, runs)
    else:
        runs = _run_all(args, folder, combos, verify, runs)
    if args.limit is None or args.results:
        report(runs, results, policies, tuple(int(x) for x in args.x.split(",")))
    if args.limit is None:
        plot(runs, ROOT / "docs" / "paper-alloc.png")


def _run_all(
    args: argparse.Namespace,
    folder: Path,
    combos: list[tuple[str, str, int]],
    verify: list[bool],
    runs: list[Run],
) -> list[Run]:
    """Run ``combos`` in order in this process, one progress line each, ``--out`` rewritten after
    every run (so ``--resume`` loses at most the run in progress)."""
    t0 = time.perf_counter()
    r_cpu: list[float] = []
    for i, ((tr, po, seed), ver) in enumerate(zip(combos, verify, strict=True)):
        r = _run_and_write(args, folder, tr, po, seed, ver, runs)
        r_cpu.append(r.cpu_s + r.verify_cpu_s)
        done = i + 1
        eta = (time.perf_counter() - t0) / done * (len(combos) - done)
        bar = "#" * (30 * done // len(combos))
        print(f"[{bar:<30}] {done}/{len(combos)} {_run_line(r)} (eta {eta / 60:.0f} min)", flush=True)
    _cpu_line("", r_cpu)
    return runs


def _run_claimed(args: argparse.Namespace, folder: Path, plan: list[list[list[Any]]], claims: Path) -> None:
    """One process of a ``--jobs`` run: every group of ``plan`` no other process has taken, in
    plan order, its runs into ``--out``. The ETA: the groups not taken yet and the rest of this
    one, at the rate of this process's runs so far, shared by the ``--shard`` N processes."""
    tag = f"process {args.shard}"
    jobs = int(args.shard.split("/")[1]) if "/" in args.shard else 1
    t0 = time.perf_counter()
    runs: list[Run] = []
    r_cpu: list[float] = []
    for g, group in claimed_groups(plan, claims):
        for k, (tr, po, seed, ver) in enumerate(group):
            r = _run_and_write(args, folder, tr, po, int(seed), bool(ver), runs)
            r_cpu.append(r.cpu_s + r.verify_cpu_s)
            left = sum(len(plan[i]) for i in unclaimed(plan, claims)) / jobs + len(group) - k - 1
            eta = (time.perf_counter() - t0) / len(runs) * left
            print(
                f"{tag} group {g + 1}/{len(plan)} run {k + 1}/{len(group)}: {_run_line(r)} "
                f"(eta {eta / 60:.0f} min)",
                flush=True,
            )
    _cpu_line(f"{tag} ", r_cpu)


def _run_and_write(
    args: argparse.Namespace, folder: Path, tr: str, po: str, seed: int, ver: bool, runs: list[Run]
) -> Run:
    r = run_one(folder, tr, po, seed, args.limit, verify=ver, node_order=args.node_order)
    runs.append(r)
    write_runs(args.out, runs)
    return r


def _run_line(r: Run) -> str:
    a = {x: round(r.alloc[x], 2) for x in X_REPORTED if x < len(r.alloc)}
    return (
        f"{r.trace} {r.policy} seed {r.seed}: {r.bound}/{r.pods} bound, alloc {a}, {r.wall_s:.0f} s "
        f"(cpu {r.cpu_s:.1f} s){f', verify {r.verified} (cpu {r.verify_cpu_s:.1f} s)' if r.verified else ''}"
    )


def _cpu_line(tag: str, r_cpu: list[float]) -> None:
    if r_cpu:
        print(
            f"paper: {tag}{len(r_cpu)} run(s), CPU per run {statistics.mean(r_cpu):.2f} s "
            "(this process, verification included)",
            flush=True,
        )


if __name__ == "__main__":
    from api.process import tune_gc

    tune_gc()
    main()
