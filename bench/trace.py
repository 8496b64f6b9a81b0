"""Trace replay (``python -m bench.trace``): the openb GPU cluster trace through the real ledger.

Input: the Alibaba cluster-trace-gpu-v2023 "openb" CSVs (Weng et al., "Beware of
Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent",
USENIX ATC '23; research/study use). The folder comes from ``PODLEDGER_TRACE_DIR``, default
``../shared/data/openb`` next to the repository; nothing is copied into this repository. With
no trace present the benchmark prints one skip line and returns. ``PODLEDGER_TRACE_PODS``
picks another pod list of the folder (e.g. ``openb_pod_list_gpuspec33.csv``);
``PODLEDGER_TRACE_LIMIT=N`` replays only the first N tasks (a quick check).

The trace's files and their mapping to Kubernetes objects: ``bench/openb.py``.

Run: a private ledger database (``api.services.simulate.private_ledger``), the virtual clock of
``Simulation.advance`` (jump to every scheduler timer before the next trace timestamp), and
per distinct trace timestamp ``t``: one ``delete_objects`` call for the tasks ending at ``t``,
one ``apply_objects`` call for the tasks starting at ``t``, then ``Bridge.run_until_idle(t)``
(which folds the log into the core, runs every cycle and appends the decisions). A task that
starts and ends at the same second is deleted after that scheduling round.

Reported: wall time of the replay (goal <= 60 s), scheduling cycles/s and binds/s over that
wall time, p50/p99 wall time of one trace timestamp, events and append transactions, final and
peak CPU/GPU allocation (allocated / allocatable), the time-weighted mean allocation, the
fraction of tasks that were ever bound, and the peak RSS of this process (``ru_maxrss``; goal
<= 500 MB; the PostgreSQL server is a separate process). Printed besides: CPU time of this
process and of the ledger's PostgreSQL backends, wall/CPU per phase, and every unschedulable
attempt or preemption. The whole default trace writes ``bench/results/trace.json``; another
pod list or a partial run writes ``trace-<variant>[-first<N>].json``. Requests carry no
idempotency key (like ``podledger apply``) unless ``PODLEDGER_TRACE_IDEMPOTENT=1``.
"""

from __future__ import annotations

import os
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import Metric, print_table, write
from bench.openb import (
    DEFAULT_TRACE_DIR,
    EPOCH,
    GPU,
    NAMESPACE,
    NODE_FILE,
    POD_FILE,
    Task,
    load,
    node_manifest,
    pod_manifest,
    priority_class_manifests,
    read_nodes,
    read_tasks,
    trace_dir,
)

GOAL_WALL_S = 60.0
GOAL_RSS_MB = 500.0
PROGRESS_EVERY_S = 5.0
# Clients send no idempotency key by default (as `podledger apply`/`delete` do); set
# PODLEDGER_TRACE_IDEMPOTENT=1 to send one per request (as `podledger simulate` does).
IDEMPOTENT = os.environ.get("PODLEDGER_TRACE_IDEMPOTENT", "0") == "1"
# Group commit per trace timestamp (see ``replay``); PODLEDGER_TRACE_GROUP=0 gives every request
# and every scheduling run a transaction of its own (the way before, for comparison).
GROUP = os.environ.get("PODLEDGER_TRACE_GROUP", "1") == "1"
# Re-run every recorded decision from the resulting log (``replay --verify``) and verify the
# hash chain after the replay (not part of its wall time); PODLEDGER_TRACE_VERIFY=0 skips both.
VERIFY = os.environ.get("PODLEDGER_TRACE_VERIFY", "1") == "1"


@dataclass
class Usage:
    """Allocation bookkeeping over the virtual clock (from the scheduler's decisions)."""

    total_cpu: int
    total_gpu: int
    cpu: int = 0
    gpu: int = 0
    gpu_share: int = 0  # milli-GPUs actually asked for by bound tasks
    peak_cpu: int = 0
    peak_gpu: int = 0
    peak_gpu_share: int = 0
    area_cpu: float = 0.0
    area_gpu: float = 0.0
    since: float = 0.0
    start: float = 0.0
    bound: dict[str, Task] = field(default_factory=dict)
    ever_bound: set[str] = field(default_factory=set)

    def advance(self, now: float) -> None:
        dt = now - self.since
        if dt > 0:
            self.area_cpu += self.cpu * dt
            self.area_gpu += self.gpu * dt
            self.since = now

    def bind(self, key: str, task: Task) -> None:
        if key in self.bound:
            return
        self.bound[key] = task
        self.ever_bound.add(key)
        self.cpu += task.cpu_milli
        self.gpu += task.gpus
        self.gpu_share += task.gpu_share_milli if task.num_gpu else 0
        self.peak_cpu = max(self.peak_cpu, self.cpu)
        self.peak_gpu = max(self.peak_gpu, self.gpu)
        self.peak_gpu_share = max(self.peak_gpu_share, self.gpu_share)

    def unbind(self, key: str) -> None:
        task = self.bound.pop(key, None)
        if task is not None:
            self.cpu -= task.cpu_milli
            self.gpu -= task.gpus
            self.gpu_share -= task.gpu_share_milli if task.num_gpu else 0

    def mean(self, end: float) -> tuple[float, float]:
        span = end - self.start
        if span <= 0:
            return 0.0, 0.0
        return self.area_cpu / span / self.total_cpu, self.area_gpu / span / max(1, self.total_gpu)


class Phases:
    """Wall and CPU time of this process per phase of the replay."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, float] = defaultdict(float)

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        w, c = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.wall[name] += time.perf_counter() - w
            self.cpu[name] += time.process_time() - c

    def summary(self) -> str:
        return ", ".join(f"{k} {self.wall[k]:.1f} s (CPU {self.cpu[k]:.1f} s)" for k in self.wall)


@dataclass
class Outcome:
    wall_s: float = 0.0
    cpu_s: float = 0.0  # CPU time of this process during the replay
    server_cpu_s: float | None = None  # CPU time of this ledger's PostgreSQL backends
    phases: Phases = field(default_factory=Phases)
    steps: int = 0
    cycles: int = 0
    binds: int = 0
    unschedulable: int = 0
    preempted: int = 0
    events: int = 0
    rss_mb: float = 0.0
    tasks: int = 0
    nodes: int = 0
    final_cpu: float = 0.0
    final_gpu: float = 0.0
    peak_cpu: float = 0.0
    peak_gpu: float = 0.0
    peak_gpu_share: float = 0.0
    mean_cpu: float = 0.0
    mean_gpu: float = 0.0
    ever_bound: float = 0.0
    pending_at_end: int = 0
    virtual_days: float = 0.0
    check: str = ""
    placements: dict[str, str] = field(default_factory=dict)  # pod -> node of its last bind
    step_ms: list[float] = field(default_factory=list)  # wall time of each trace timestamp
    notes: list[str] = field(default_factory=list)  # unschedulable attempts and preemptions
    input_appends: int = 0  # apply_objects / delete_objects calls (one transaction each)
    decision_appends: int = 0  # run_until_idle calls that appended decisions
    commits: int = 0  # group-commit transactions (0 without group commit)
    verify_s: float = 0.0  # wall time of `replay --verify` and the chain check
    verify_runs: int = 0  # scheduling runs re-run by `replay --verify`
    verify_decisions: int = 0
    mismatches: int | None = None  # None: not verified
    chain_ok: bool | None = None

    def step_percentile(self, q: float) -> float:
        if not self.step_ms:
            return 0.0
        ordered = sorted(self.step_ms)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def backend_cpu_seconds(database: Any) -> float | None:
    """CPU time used so far by the PostgreSQL backends connected to this ledger's database
    (read from /proc: only when the server runs on this machine and /proc is readable)."""
    import psycopg

    try:
        with database.connect() as conn:
            pids = [
                int(r[0])
                for r in conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
            ]
        tick = os.sysconf("SC_CLK_TCK")
        total = 0
        for pid in pids:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime + stime
        return total / tick
    except (OSError, ValueError, IndexError, psycopg.Error):
        return None


def peak_rss_mb() -> float:
    # Linux reports ru_maxrss in KiB (macOS in bytes).
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 1024 / 1024 if sys.platform == "darwin" else rss / 1024


def _progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def replay(folder: Path, pod_file: str = POD_FILE, limit: int | None = None) -> Outcome:
    from api.services.commands import objects as commands
    from api.services.simulate import private_ledger
    from ledger.sql import scalar
    from ledger.uow import UnitOfWork
    from scheduler import decisions as d
    from scheduler.edge.bridge import Bridge, from_ts

    out = Outcome()
    phase = out.phases
    t_start, c_start = time.perf_counter(), time.process_time()
    nodes = read_nodes(folder / NODE_FILE)
    tasks = read_tasks(folder / pod_file, limit)
    by_key = {f"{NAMESPACE}/{t.name}": t for t in tasks}
    creates: dict[int, list[Task]] = defaultdict(list)
    deletes: dict[int, list[Task]] = defaultdict(list)  # tasks created before their deletion time
    same_second: dict[int, list[Task]] = defaultdict(list)  # created and deleted at the same second
    for t in tasks:
        creates[t.created].append(t)
        if t.deleted is not None:
            (same_second if t.deleted <= t.created else deletes)[max(t.deleted, t.created)].append(t)
    times = sorted(set(creates) | set(deletes) | set(same_second))
    out.tasks, out.nodes = len(tasks), len(nodes)

    usage = Usage(
        total_cpu=sum(n.cpu_milli for n in nodes),
        total_gpu=sum(n.gpu for n in nodes),
        since=EPOCH + (times[0] if times else 0),
        start=EPOCH + (times[0] if times else 0),
    )
    with ExitStack() as stack:
        with phase("private ledger (CREATE DATABASE)"):
            database = stack.enter_context(private_ledger())
        server_cpu0 = backend_cpu_seconds(database)
        bridge = Bridge(database, actor="openb-trace")

        def absorb(results: list[d.CycleResult]) -> None:
            out.cycles += len(results)
            for r in results:
                for dec in r.decisions:
                    if isinstance(dec, d.PodBound):
                        out.binds += 1
                        out.placements[dec.pod] = dec.node
                        usage.bind(dec.pod, by_key[dec.pod])
                    elif isinstance(dec, d.PodPreempted):
                        out.preempted += 1
                        usage.unbind(dec.victim)
                        out.notes.append(
                            f"day {(r.now - EPOCH) / 86400:.2f}: {dec.victim} (priority {dec.victim_priority}) "
                            f"preempted on {dec.node} by {dec.preemptor} (priority {dec.preemptor_priority})"
                        )
                    elif isinstance(dec, d.PodUnschedulable):
                        out.unschedulable += 1
                        out.notes.append(
                            f"day {(r.now - EPOCH) / 86400:.2f}: {dec.pod} unschedulable: {dec.message}"
                        )

        now = EPOCH + (times[0] if times else 0)
        # Group commit (GROUP=1, the default): a trace timestamp is one transaction: the timer
        # runs due before it, its deletions, its creations and the scheduling runs they cause
        # (a grouped unit of work writes the inline projection once per group, the bridge
        # reads and appends through the same unit and folds the inputs it just appended
        # without reading them back). Nothing is acknowledged before that commit. Without
        # group commit every apply/delete is a unit of work of its own.
        uow_of: list[UnitOfWork] = []  # the open group's unit of work (empty: no group)

        @contextmanager
        def request() -> Iterator[UnitOfWork]:
            """The unit of work of one apply/delete: the group's, or one of its own (committed)."""
            if uow_of:
                yield uow_of[0]
                return
            with database.unit_of_work() as uow:
                yield uow
                uow.commit()

        def schedule(at: float) -> None:
            with phase("bridge.run_until_idle"):
                results = bridge.run_until_idle(at)
            out.decision_appends += bool(results)
            absorb(results)

        def delete(batch: list[Task], at: float, key: str) -> None:
            if not batch:
                return
            usage.advance(at)
            out.input_appends += 1
            with phase("services.delete_objects"), request() as uow:
                stored = commands.delete_objects(
                    uow,
                    [("Pod", NAMESPACE, t.name) for t in batch],
                    actor="openb-trace",
                    effective_at=from_ts(at),
                    idempotency_key=key if IDEMPOTENT else None,
                )
                if uow_of:
                    bridge.fold_stored(stored)
            for t in batch:
                usage.unbind(f"{NAMESPACE}/{t.name}")

        def apply(manifests: list[dict[str, Any]], at: float, source: str, key: str) -> None:
            with phase("validation"):
                objects = load(manifests, source)
            out.input_appends += 1
            with phase("services.apply_objects"), request() as uow:
                result = commands.apply_objects(
                    uow,
                    objects,
                    actor="openb-trace",
                    source=source,
                    effective_at=from_ts(at),
                    idempotency_key=key if IDEMPOTENT else None,
                )
                if not result.ok:
                    raise RuntimeError(f"{source}: apply refused: {result.errors[:3]}")
                if uow_of:
                    bridge.fold_stored(result.events)

        @contextmanager
        def group() -> Iterator[None]:
            if not GROUP:
                yield
                return
            with phase("commit"):
                stack = ExitStack()
                uow = stack.enter_context(database.unit_of_work(grouped=True))
                stack.enter_context(bridge.joined(uow))
            uow_of.append(uow)
            try:
                yield
            except BaseException:
                uow_of.clear()
                stack.__exit__(*sys.exc_info())
                raise
            uow_of.clear()
            out.commits += 1
            with phase("commit"), stack:
                uow.commit()  # the group's projection, then COMMIT (one pipeline)

        with group():
            apply(
                priority_class_manifests() + [node_manifest(n) for n in nodes],
                now,
                "openb nodes",
                "openb:setup",
            )
            schedule(now)

        last_report = time.perf_counter()
        for i, ts in enumerate(times):
            step_start = time.perf_counter()
            at = EPOCH + ts
            with group():
                # the discrete-event clock of Simulation.advance: every timer before this timestamp
                while True:
                    nxt = bridge.scheduler.next_timer(now)
                    if nxt is None or nxt >= at:
                        break
                    now = max(now, nxt)
                    usage.advance(now)
                    schedule(now)
                now = at
                usage.advance(now)
                delete(deletes.get(ts, []), now, f"openb:{ts}:delete")
                batch = creates.get(ts)
                if batch:
                    apply([pod_manifest(t) for t in batch], now, f"openb t={ts}", f"openb:{ts}:apply")
                schedule(now)
                if ts in same_second:
                    delete(same_second[ts], now, f"openb:{ts}:delete-same-second")
                    schedule(now)
            out.steps += 1
            out.step_ms.append((time.perf_counter() - step_start) * 1000)
            if time.perf_counter() - last_report >= PROGRESS_EVERY_S:
                last_report = time.perf_counter()
                _progress(
                    f"  trace: {i + 1:,}/{len(times):,} timestamps, day {ts / 86400:.1f}, "
                    f"{out.binds:,} binds, {time.perf_counter() - t_start:.0f} s"
                )
        end = now
        usage.advance(end)
        out.wall_s = time.perf_counter() - t_start
        out.cpu_s = time.process_time() - c_start
        out.rss_mb = peak_rss_mb()
        server_cpu1 = backend_cpu_seconds(database)
        if server_cpu0 is not None and server_cpu1 is not None:
            out.server_cpu_s = server_cpu1 - server_cpu0

        # cross-check the bookkeeping against the core's own snapshot, then read the log
        alloc_cpu = used_cpu = alloc_gpu = used_gpu = 0
        for _name, alloc, req in bridge.scheduler.node_usage():
            alloc_cpu += alloc.get("cpu", 0)
            used_cpu += req.get("cpu", 0)
            alloc_gpu += alloc.get(GPU, 0)
            used_gpu += req.get(GPU, 0)
        problems = []
        if (alloc_cpu, alloc_gpu) != (usage.total_cpu, usage.total_gpu):
            problems.append(
                f"allocatable {alloc_cpu}/{alloc_gpu} != trace {usage.total_cpu}/{usage.total_gpu}"
            )
        if (used_cpu, used_gpu) != (usage.cpu, usage.gpu):
            problems.append(f"core allocation {used_cpu}/{used_gpu} != bookkeeping {usage.cpu}/{usage.gpu}")
        with database.connect() as conn:
            out.events = int(scalar(conn, "SELECT count(*) FROM events"))
            stored_binds = int(scalar(conn, "SELECT count(*) FROM events WHERE type = 'PodBound'"))
        model_of = {n.name: n.model for n in nodes}
        gpus_of = {n.name: n.gpu for n in nodes}
        for key, node in out.placements.items():
            task = by_key[key]
            if task.gpu_spec and model_of[node] not in task.gpu_spec:
                problems.append(
                    f"{key} (gpu_spec {'|'.join(task.gpu_spec)}) bound to {node} ({model_of[node]})"
                )
            if task.gpus > gpus_of[node]:
                problems.append(f"{key} needs {task.gpus} GPUs, bound to {node} with {gpus_of[node]}")
        if stored_binds != out.binds:
            problems.append(f"{stored_binds} PodBound events stored, {out.binds} decided")
        out.check = "; ".join(problems) or "ok"
        out.pending_at_end = sum(1 for p in bridge.scheduler.pods() if p.node_name is None)
        if VERIFY:
            from api.services.replay import verify_replay
            from ledger.verify import verify_chain

            _progress("  trace: replay --verify on the resulting log ...")
            v0 = time.perf_counter()
            rep = verify_replay(database)
            out.verify_runs, out.verify_decisions = rep.runs, rep.decisions
            out.mismatches = len(rep.mismatches)
            out.chain_ok = verify_chain(database).ok
            out.verify_s = time.perf_counter() - v0
            if rep.mismatches:
                problems.append(
                    f"replay --verify: {len(rep.mismatches)} mismatches, first {rep.mismatches[0]}"
                )
            if not out.chain_ok:
                problems.append("verify: the hash chain does not verify")
            out.check = "; ".join(problems) or "ok"

    out.final_cpu = usage.cpu / usage.total_cpu
    out.final_gpu = usage.gpu / max(1, usage.total_gpu)
    out.peak_cpu = usage.peak_cpu / usage.total_cpu
    out.peak_gpu = usage.peak_gpu / max(1, usage.total_gpu)
    out.peak_gpu_share = usage.peak_gpu_share / 1000 / max(1, usage.total_gpu)
    out.mean_cpu, out.mean_gpu = usage.mean(end)
    out.ever_bound = len(usage.ever_bound) / max(1, len(tasks))
    out.virtual_days = (end - usage.start) / 86400
    return out


def metrics_of(o: Outcome) -> list[Metric]:
    wall = o.wall_s
    return [
        Metric(
            "trace replay wall time",
            wall,
            "s",
            goal=f"wall <= {GOAL_WALL_S:g} s",
            met=wall <= GOAL_WALL_S and o.mismatches == 0,
        ),
        Metric(
            "peak RSS (this process)",
            o.rss_mb,
            "MB",
            goal=f"RSS <= {GOAL_RSS_MB:g} MB",
            met=o.rss_mb <= GOAL_RSS_MB,
        ),
        Metric("scheduling cycles / s (wall)", o.cycles / wall if wall else 0.0, "cycles/s", goal="reported"),
        Metric("binds / s (wall)", o.binds / wall if wall else 0.0, "binds/s", goal="reported"),
        Metric("trace timestamps / s (wall)", o.steps / wall if wall else 0.0, "steps/s", goal="reported"),
        Metric("trace timestamp p50 (apply/delete + cycles)", o.step_percentile(0.5), "ms", goal="reported"),
        Metric("trace timestamp p99", o.step_percentile(0.99), "ms", goal="reported"),
        Metric("events appended", float(o.events), "events", goal="reported"),
        Metric(
            "transactions (commits)",
            float(o.commits or o.input_appends + o.decision_appends),
            "txns",
            goal="reported",
        ),
        Metric(
            "replay --verify mismatches (decisions re-run from the log)",
            float(o.mismatches if o.mismatches is not None else -1),
            f"of {o.verify_decisions:,}",
            goal="= 0",
            met=o.mismatches == 0 and bool(o.chain_ok),
        ),
        Metric("tasks ever bound", o.ever_bound, "fraction", goal="reported"),
        Metric("final CPU allocation", o.final_cpu, "fraction", goal="reported"),
        Metric("final GPU allocation (whole GPUs)", o.final_gpu, "fraction", goal="reported"),
        Metric("peak CPU allocation", o.peak_cpu, "fraction", goal="reported"),
        Metric("peak GPU allocation (whole GPUs)", o.peak_gpu, "fraction", goal="reported"),
        Metric("peak GPU share requested", o.peak_gpu_share, "fraction", goal="reported"),
        Metric("mean CPU allocation (time-weighted)", o.mean_cpu, "fraction", goal="reported"),
        Metric("mean GPU allocation (time-weighted)", o.mean_gpu, "fraction", goal="reported"),
    ]


def main() -> None:
    folder = trace_dir()
    if folder is None:
        where = os.environ.get("PODLEDGER_TRACE_DIR") or str(DEFAULT_TRACE_DIR)
        print(f"bench.trace: skipped, no openb trace at {where} (set PODLEDGER_TRACE_DIR)")
        return
    pod_file = os.environ.get("PODLEDGER_TRACE_PODS") or POD_FILE
    if not (folder / pod_file).is_file():
        print(f"bench.trace: skipped, no {pod_file} in {folder}")
        return
    limit_env = os.environ.get("PODLEDGER_TRACE_LIMIT")
    limit = int(limit_env) if limit_env else None
    _progress(f"bench.trace: replaying {folder / pod_file}" + (f" (first {limit} tasks)" if limit else ""))
    o = replay(folder, pod_file, limit)
    metrics = metrics_of(o)
    # The goals are about the whole default trace; variants and partial runs get their own file.
    name = "trace"
    if pod_file != POD_FILE:
        name += "-" + Path(pod_file).stem.removeprefix("openb_pod_list_")
    if limit is not None:
        name += f"-first{limit}"
    print_table(f"openb trace replay (bench/results/{name}.json)", metrics)
    print(
        f"{o.nodes:,} nodes, {o.tasks:,} tasks, {o.steps:,} trace timestamps over {o.virtual_days:.1f} virtual days; "
        f"{o.cycles:,} cycles, {o.binds:,} binds, {o.unschedulable:,} unschedulable attempts, "
        f"{o.preempted:,} preemptions, {o.pending_at_end:,} pods pending at the end; {o.events:,} events in "
        f"{o.input_appends:,} input requests + {o.decision_appends:,} decision appends in "
        f"{o.commits or o.input_appends + o.decision_appends:,} transactions"
        f"{' (group commit per trace timestamp)' if o.commits else ''}.\n"
        f"wall {o.wall_s:.1f} s, CPU of this process {o.cpu_s:.1f} s, CPU of the ledger's PostgreSQL backends "
        f"{'n/a' if o.server_cpu_s is None else f'{o.server_cpu_s:.1f} s'}; consistency check: {o.check}\n"
        f"by phase: {o.phases.summary()}\n"
        + (
            f"replay --verify: {o.verify_runs:,} runs, {o.verify_decisions:,} decision events re-derived, "
            f"{o.mismatches} mismatches; hash chain {'ok' if o.chain_ok else 'BROKEN'} ({o.verify_s:.1f} s)"
            if o.mismatches is not None
            else "replay --verify: skipped (PODLEDGER_TRACE_VERIFY=0)"
        )
    )
    for note in o.notes[:20]:
        print(f"  {note}")
    if len(o.notes) > 20:
        print(f"  ... and {len(o.notes) - 20} more unschedulable attempts / preemptions")
    write(name, metrics)


if __name__ == "__main__":
    from api.process import tune_gc

    tune_gc()
    main()
