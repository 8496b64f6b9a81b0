"""Audit at scale (``python -m bench.audit [--events N]``): explain, history and state at a past
position on a long log built through the real write path (issue 14).

The log: a private database; nodes, an ElasticQuota and 10,000 bound pods in namespace ``big``;
then rounds of 10 virtual seconds, each applying a gang PodGroup with 4 pods in ``big`` and a
batch of plain pods in ``churn``, deleting the group and pods of earlier rounds, and running the
scheduler (``Bridge.run_until_idle``: catch up, cycles, every decision appended). Two pods and a
gang in ``big`` never fit, so every round past their backoff retries them. Every object goes
through ``load_documents``, admission and the append of the apply command, as ``podledger apply`` would.
Rounds stop once the log holds ``--events`` events (default 1,000,000; ``--events 20000`` for a
quick run, with ``--big-pods 2000``; also ``PODLEDGER_AUDIT_EVENTS``).

Measured on it (issue 14's goals beside each):
- ``explain`` live p99 for a pod group and a pod of ``big`` (goal <= 5 ms);
- ``explain --at`` p99 at 10 positions spread over the log, for a group alive at that position
  and one of the 10,000 pods (goal <= 50 ms);
- ``get pods --at`` (every pod of ``big`` as of the position) p99 at the same positions (goal <= 200 ms);
- ``history`` p99 of a pod and a group;
- ``replay --verify`` throughput over the whole log (goal >= 50,000 events/s);
- baseline, same run: the full fold from position 0 that ``--at`` did before, at the first of
  the 10 positions (the others cost proportionally more).
Writes bench/results/audit.json (or audit-<events>-<big pods>.json for another size).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from bench.append import drop_database, fresh_database
from bench.common import Metric, print_table, write
from bench.writes import apply, delete
from ledger import db
from ledger.resources.parse import Document
from ledger.sql import scalar

DEFAULT_EVENTS = 1_000_000
BASELINE_TIMEOUT_S = 300  # the per-change GPU view over a 1M-event log: stopped here
BIG = "big"
BIG_PODS = 10_000
N_NODES = 300
CHURN_PER_ROUND = 200
KEEP_ROUNDS = 5  # churn pods live this many rounds
KEEP_GROUPS = 50  # gangs of big live this many rounds
ROUND_SECONDS = 10.0
MIN_ROUNDS = 20  # even on a small log: gangs come and go, the stuck pods retry
EPOCH = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
PARTITION_CHECK_ROUNDS = 100  # partitions.ensure every 100 rounds (~80k events), as the worker does


def _node(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"node-{i:04d}", "labels": {"rack": f"rack-{i // 20:02d}"}},
        "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "250"}},
    }


def _pod(ns: str, name: str, cpu: str, mem: str, group: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": mem}}}]
    }
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def _group(name: str, min_count: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": BIG},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }


def _gang(name: str, size: int, cpu: str) -> list[dict[str, Any]]:
    return [_group(name, size)] + [_pod(BIG, f"{name}-{i}", cpu, "1Gi", name) for i in range(size)]


def _objects(raws: list[dict[str, Any]]) -> list[Any]:
    from api.services.objects import load_documents

    objs, errors = load_documents(Document(index=i + 1, source="bench", raw=r) for i, r in enumerate(raws))
    assert not errors, errors[:3]
    return objs


def _at(t: float) -> datetime:
    return datetime.fromtimestamp(t, tz=UTC)


def build(database: Any, target: int) -> dict[str, Any]:
    """Append inputs and scheduling rounds until the log holds ``target`` events."""
    from ledger import partitions, store
    from scheduler.edge.bridge import Bridge

    t = EPOCH
    setup = [_node(i) for i in range(N_NODES)]
    setup.append(
        {
            "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
            "kind": "ElasticQuota",
            "metadata": {"name": "quota-big", "namespace": BIG},
            "spec": {"min": {"cpu": "4000"}, "max": {"cpu": "8000"}},
        }
    )
    apply(database, _objects(setup), actor="bench", effective_at=_at(t))
    for start in range(0, BIG_PODS, 2_500):
        raws = [
            _pod(BIG, f"pod-{i:05d}", "100m", "128Mi") for i in range(start, min(BIG_PODS, start + 2_500))
        ]
        apply(database, _objects(raws), actor="bench", effective_at=_at(t))
    # never fit: plain pods and a gang asking for more than a node has (retried every backoff)
    stuck = [_pod(BIG, f"huge-{i}", "100", "1Gi") for i in range(2)] + _gang("huge-gang", 2, "100")
    apply(database, _objects(stuck), actor="bench", effective_at=_at(t))
    bridge = Bridge(database, actor="bench")
    bridge.run_until_idle(t)
    rounds = 0
    t_build = time.perf_counter()
    with database.connect() as c:
        head = store.head(c)
    head0, last = head, (head, t_build)
    while head < target or rounds < MIN_ROUNDS:
        if rounds % PARTITION_CHECK_ROUNDS == 0:
            # what the worker does every PODLEDGER_PARTITION_CHECK_INTERVAL seconds: keep empty
            # partitions ahead of the head (a log past the last one would fill the default one)
            partitions.ensure(database)
        rounds += 1
        t += ROUND_SECONDS
        r = rounds
        gone: list[tuple[str, str | None, str]] = []
        if r > KEEP_ROUNDS:
            gone += [("Pod", "churn", f"c{r - KEEP_ROUNDS}-{i}") for i in range(CHURN_PER_ROUND)]
        if r > KEEP_GROUPS:
            old = f"g{r - KEEP_GROUPS}"
            gone += [("Pod", BIG, f"{old}-{i}") for i in range(4)] + [("PodGroup", BIG, old)]
        if gone:
            delete(database, gone, actor="bench", effective_at=_at(t))
        raws = _gang(f"g{r}", 4, "500m") + [
            _pod("churn", f"c{r}-{i}", ("250m", "500m", "1")[i % 3], "1Gi") for i in range(CHURN_PER_ROUND)
        ]
        apply(database, _objects(raws), actor="bench", effective_at=_at(t))
        bridge.run_until_idle(t)
        with database.connect() as c:
            head = store.head(c)
        if rounds % 10 == 0:
            # the last 10 rounds alone (a rate over the whole build, setup events included,
            # falls for a while even when every round costs the same)
            now = time.perf_counter()
            per, rate = (now - last[1]) / 10, (head - last[0]) / (now - last[1])
            print(
                f"  round {rounds}: {head:,} events ({per:.3f} s/round, {rate:,.0f} events/s)",
                file=sys.stderr,
                flush=True,
            )
            last = (head, now)
    build_s = time.perf_counter() - t_build
    return {"rounds": rounds, "events": head, "round_events": head - head0, "build_s": build_s}


def _p99(samples: list[float]) -> float:
    s = sorted(samples)
    return s[min(len(s) - 1, int(round(0.99 * (len(s) - 1))))] * 1000


def _time(fn: Callable[[], Any], reps: int) -> list[float]:
    fn()  # warm
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def measure(
    database: Any, info: dict[str, Any], reps: int, verify: bool = True, owner: Any = None
) -> list[Metric]:
    from api.services import explain as explain_service
    from api.services import history as history_service
    from api.services import replay as replay_service
    from api.services import state as state_service
    from ledger import store
    from ledger.projections import temporal
    from ledger.queries.state import list_objects_at
    from tests.api.explain_oracle import explain_by_queries  # the baseline (run from a checkout)

    with database.connect() as c:
        head = store.head(c)
        first_bound = int(
            scalar(
                c,
                "SELECT min(position) FROM events WHERE type = 'PodBound' AND data->>'pod' = %s",
                (f"{BIG}/pod-{BIG_PODS - 1:05d}",),
            )
        )
    # 10 positions spread from after the 10k pods are bound to just before the head
    positions = [first_bound + (head - 1 - first_bound) * k // 9 for k in range(10)]
    groups: dict[int, str] = {}
    with database.transaction() as c:
        for p in positions:
            row = c.execute(
                "SELECT name FROM object_versions WHERE kind = 'PodGroup' AND namespace = %(n)s "
                "AND valid_from <= %(p)s AND valid_to > %(p)s AND name LIKE 'g%%' ORDER BY valid_from DESC LIMIT 1",
                {"n": BIG, "p": p},
            ).fetchone()
            groups[p] = row[0] if row else "huge-gang"
        live_group = scalar(
            c,
            "SELECT coalesce(max(name), 'huge-gang') FROM objects WHERE kind = 'PodGroup' "
            "AND namespace = %s AND name LIKE 'g%%'",
            (BIG,),
        )
    pod = f"pod-{BIG_PODS // 2:05d}"

    def step(what: str) -> None:
        print(f"  measuring {what} ...", file=sys.stderr, flush=True)

    step(f"live explain ({reps} samples each, one statement and one query at a time)")
    live_g = _time(lambda: explain_service.explain(database, "PodGroup", BIG, live_group), reps)
    live_p = _time(lambda: explain_service.explain(database, "Pod", BIG, pod), reps)
    # baseline, same run: live explain one query at a time (before issue 14's one statement)
    live_g0 = _time(lambda: explain_by_queries(database, "PodGroup", BIG, live_group), reps)
    live_p0 = _time(lambda: explain_by_queries(database, "Pod", BIG, pod), reps)
    step("explain --at and get pods --at at 10 positions")
    at_g: list[float] = []
    at_g0: list[float] = []
    at_p0: list[float] = []
    at_p: list[float] = []
    get_at: list[float] = []
    get_at0: list[float] = []
    per = max(3, reps // 10)
    for p in positions:
        at_g += _time(lambda p=p: explain_service.explain(database, "PodGroup", BIG, groups[p], at=p), per)
        at_p += _time(lambda p=p: explain_service.explain(database, "Pod", BIG, pod, at=p), per)
        # baseline: one query at a time, a temporary view
        at_g0 += _time(lambda p=p: explain_by_queries(database, "PodGroup", BIG, groups[p], at=p), per)
        at_p0 += _time(lambda p=p: explain_by_queries(database, "Pod", BIG, pod, at=p), per)
        print(f"    position {p:,} done", file=sys.stderr, flush=True)

        def get_pods(p: int = p) -> int:  # what `get pods -n big --at P` reads for its table
            with database.connect() as c:
                return len(list_objects_at(c, p, "Pod", BIG))

        get_at += _time(get_pods, 3)

        def get_pods_rows(p: int = p) -> int:  # baseline: whole rows (manifest and status), as before
            with database.connect() as c:
                return len(temporal.objects_at_position(c, p, kind="Pod", namespace=BIG))

        get_at0 += _time(get_pods_rows, 3)
    step("history, state at a position, the full fold (baseline)")
    hist_p = _time(lambda: history_service.history(database, "Pod", BIG, pod), reps)
    hist_g = _time(lambda: history_service.history(database, "PodGroup", BIG, live_group), reps)
    state_s = _time(lambda: state_service.state_at(database, positions[len(positions) // 2]), 1)

    t0 = time.perf_counter()
    # the fold's temporary table needs TEMP, which only the owner has (migration 0024)
    with (owner or database).transaction() as c:
        temporal.fold_objects_at(c, positions[0])
        c.rollback()
    fold_s = time.perf_counter() - t0

    step(f"replay --verify over {head:,} events" if verify else "nothing more (--no-verify)")
    last = [time.perf_counter()]

    def progress(r: Any) -> None:
        if time.perf_counter() - last[0] >= 10:
            last[0] = time.perf_counter()
            print(f"    {r.runs:,} runs, {r.cycles:,} cycles verified", file=sys.stderr, flush=True)

    t0 = time.perf_counter()
    rep = replay_service.verify_replay(database, progress) if verify else replay_service.VerifyReport()
    verify_s = time.perf_counter() - t0
    assert rep.ok, rep.mismatches[:3]
    with database.connect() as c:
        size = scalar(c, "SELECT pg_database_size(current_database())")
        versions = scalar(c, "SELECT count(*) FROM object_versions")
    record = exclusions_cost(database, verify_s / max(rep.cycles, 1) * 1000)

    def ms(
        name: str, samples: list[float], goal: float, base: float | None = None, what: str | None = None
    ) -> Metric:
        v = _p99(samples)
        return Metric(
            name,
            v,
            "ms p99",
            (what or "full fold from 0 (before)") if base is not None else None,
            base,
            v / base if base else None,
            f"value <= {goal:g} ms",
            v <= goal,
        )

    fold_ms = fold_s * 1000
    if info["rounds"]:
        built = f"{info['rounds']} rounds, {info['round_events'] / max(info['build_s'], 1e-9):,.0f} events/s"
    else:
        built = "reused (--reuse)"
    return [
        *record,
        Metric(
            "log built (real path: inputs + scheduling)",
            head,
            "events",
            None,
            None,
            None,
            f"{built}, {size / 2**30:.2f} GiB, {versions:,} object versions",
            True,
        ),
        ms("explain live: pod group in a 10k-pod namespace", live_g, 5, _p99(live_g0), "one query at a time"),
        ms("explain live: pod in a 10k-pod namespace", live_p, 5, _p99(live_p0), "one query at a time"),
        ms("explain --at (10 positions): pod group", at_g, 50, fold_ms),
        ms("explain --at (10 positions): pod", at_p, 50, fold_ms),
        ms(
            "explain --at (10 positions): pod group, vs one query at a time",
            at_g,
            50,
            _p99(at_g0),
            "as-of view (objects_at), a query each",
        ),
        ms(
            "explain --at (10 positions): pod, vs one query at a time",
            at_p,
            50,
            _p99(at_p0),
            "as-of view (objects_at), a query each",
        ),
        ms(f"get pods --at (10 positions, {BIG_PODS:,} pods of big)", get_at, 200, fold_ms),
        ms(
            f"get pods --at (10 positions, {BIG_PODS:,} pods of big), vs whole rows",
            get_at,
            200,
            _p99(get_at0),
            "before: whole rows (manifest + status) of every pod",
        ),
        ms("history: pod", hist_p, 50),
        ms("history: pod group", hist_g, 50),
        Metric(
            "state at a position (every object)",
            state_s[0] * 1000,
            "ms",
            None,
            None,
            None,
            "(reported)",
            True,
        ),
        Metric(
            "replay --verify" + ("" if verify else " (skipped: --no-verify)"),
            head / verify_s if verify else float("nan"),
            "events/s",
            None,
            None,
            None,
            f"value >= 50,000 ({rep.cycles / verify_s:,.0f} cycles/s)" if verify else "value >= 50,000",
            verify and head / verify_s >= 50_000,
        ),
    ]


def measure_analytics(database: Any, reps: int) -> list[Metric]:
    """Issue 34's windowed analytics on this log: the top unschedulable reasons over a window
    whose edges fall inside hours (buckets plus raw edges), and allocation against capacity per
    hour over the last week; each beside what answered it before, in the same run (the per-day
    view re-aggregating the whole history; the per-change allocation view)."""
    with database.connect() as c:
        lo, hi = c.execute("SELECT min(effective_at), max(effective_at) FROM events").fetchone()
    edge = min(timedelta(minutes=7, seconds=13), (hi - lo) / 10)  # inside an hour on a long log
    start, end = lo + edge, hi - edge / 2
    week = hi - timedelta(days=7)

    def query(sql: str, args: tuple[Any, ...], timeout_s: int = 0) -> Callable[[], int]:
        def run() -> int:
            with database.connect() as c:
                if timeout_s:  # a baseline that may not finish: bounded, reported as ">="
                    c.execute(f"SET statement_timeout = '{timeout_s}s'")
                try:
                    return len(c.execute(sql, args).fetchall())
                except psycopg.errors.QueryCanceled:
                    return -1
                finally:
                    if timeout_s:
                        c.execute("RESET statement_timeout")

        return run

    top = query("SELECT * FROM analytics_unschedulable(%s, %s) LIMIT 10", (start, end))
    top0 = query(
        "SELECT reason, sum(attempts) FROM v_unschedulable_reasons WHERE day >= date_trunc('day', %s::timestamptz) "
        "AND day <= %s GROUP BY 1 ORDER BY 2 DESC LIMIT 10",
        (start, end),
    )
    alloc = query(
        "SELECT hour, resource, allocated_avg, capacity_avg, fraction_avg FROM v_allocation_hourly "
        "WHERE resource IN ('gpu', 'cpu') AND hour >= %s ORDER BY hour",
        (week,),
    )
    alloc0 = query(
        "SELECT date_trunc('hour', at), max(gpus_allocated), max(gpus_allocatable) FROM v_gpu_allocation "
        "WHERE at >= %s GROUP BY 1 ORDER BY 1",
        (week,),
        BASELINE_TIMEOUT_S,
    )
    print("  measuring windowed analytics ...", file=sys.stderr, flush=True)
    n_top, n_alloc = top(), alloc()
    t_top, t_top0 = _time(top, reps), _time(top0, max(3, reps // 10))
    t_alloc, t_alloc0 = _time(alloc, reps), _time(alloc0, 1)  # the baseline once (minutes on 1M events)

    def m(name: str, samples: list[float], base: list[float], what: str, rows: int) -> Metric:
        v, b = _p99(samples), _p99(base)
        return Metric(
            name, v, "ms p99", what, b, v / b if b else None, f"value <= 1000 ms ({rows} rows)", v <= 1000
        )

    return [
        m(
            "top unschedulable reasons, window with off-hour edges",
            t_top,
            t_top0,
            "per-day view over the whole history (before)",
            n_top,
        ),
        m(
            "GPU/CPU allocation vs capacity per hour over a week",
            t_alloc,
            t_alloc0,
            "per-change v_gpu_allocation (whole history)",
            n_alloc,
        ),
    ]


def exclusions_cost(database: Any, cycle_ms: float, reps: int = 20) -> list[Metric]:
    """The per-node exclusions record of issue 31 (``PodGroupUnschedulable.exclusions``): its
    JSON size per decision beside the rest of the payload (same events), and what computing it
    costs: recomputed on the exact state of the last unschedulable gang's cycle, p99 against the
    mean cycle of this run's ``replay --verify``."""
    from api.services.explain import recompute_exclusions, state_at
    from scheduler.cycle.why import group_why

    with database.connect() as c:
        sizes = c.execute(
            "SELECT avg(length((data->'exclusions')::text)), max(length((data->'exclusions')::text)), "
            "avg(length(data::text) - length((data->'exclusions')::text)), count(*) "
            "FROM events WHERE type = 'PodGroupUnschedulable' AND data ? 'exclusions' AND data->'exclusions' <> '{}'"
        ).fetchone()
        last = c.execute(
            "SELECT position, data FROM events WHERE type = 'PodGroupUnschedulable' "
            "AND data->'exclusions' <> '{}' ORDER BY position DESC LIMIT 1"
        ).fetchone()
    if not sizes or not sizes[3] or last is None:
        return []
    avg_b, max_b, rest_b, n = float(sizes[0]), int(sizes[1]), float(sizes[2]), int(sizes[3])
    sch = state_at(database, int(last[0]) - 1)
    why = last[1]["why"]
    group = last[1]["group"]
    keys = [
        p.key
        for p in sch.pods()
        if p.pod_group and f"{p.key.split('/')[0]}/{p.pod_group}" == group and not p.node_name
    ]
    samples = _time(lambda: recompute_exclusions(sch, keys, why), reps)
    v = _p99(samples)
    med = sorted(samples)[len(samples) // 2] * 1000
    # the same-run peer: the structured diagnosis (why) every such decision already computes
    pending = [sch.state.pods[k] for k in keys]
    pg = sch.state.pod_groups[group]
    base_samples = _time(
        lambda: group_why(
            sch.state.snap,
            pending,
            min_count=pg.minimum,
            bound=0,
            topology_key=pg.topology_key,
            codes=last[1]["codes"],
            message=last[1]["message"],
        ),
        reps,
    )
    base = _p99(base_samples)
    base_med = sorted(base_samples)[len(base_samples) // 2] * 1000
    return [
        Metric(
            f"exclusions record per PodGroupUnschedulable ({n:,} decisions)",
            avg_b,
            "bytes avg",
            "rest of the payload (same events)",
            rest_b,
            avg_b / rest_b if rest_b else None,
            f"max {max_b:,} bytes (reported)",
            True,
        ),
        Metric(
            f"exclusions record compute ({len(sch.state.snap.nodes)} nodes, {len(keys)} pods)",
            v,
            "ms p99",
            "the why diagnosis of the same decision",
            base,
            v / base if base else None,
            f"(reported; median {med:.2f} ms vs {base_med:.2f} ms; mean cycle of replay --verify {cycle_ms:.2f} ms)",
            True,
        ),
    ]


def main(argv: list[str] | None = None) -> None:
    global BIG_PODS
    ap = argparse.ArgumentParser(prog="python -m bench.audit", description=__doc__.splitlines()[0])
    ap.add_argument(
        "--events", type=int, default=int(os.environ.get("PODLEDGER_AUDIT_EVENTS", DEFAULT_EVENTS))
    )
    ap.add_argument("--big-pods", type=int, default=10_000, help="bound pods in namespace big")
    ap.add_argument("--reps", type=int, default=200, help="samples per live measurement")
    ap.add_argument(
        "--no-verify", action="store_true", help="skip replay --verify (slow on a loaded machine)"
    )
    ap.add_argument("--keep", action="store_true", help="keep the database and print its URL")
    ap.add_argument("--reuse", metavar="URL", help="measure a database kept by --keep (no build)")
    ap.add_argument("--analytics-only", action="store_true", help="measure only the windowed analytics")
    args = ap.parse_args(argv)
    BIG_PODS = args.big_pods
    if args.reuse:
        db.server_url()  # the embedded server stops with the process that started it: start it again
    url = args.reuse or fresh_database()
    if args.keep and not args.reuse:
        print(f"database (kept): {url}", file=sys.stderr, flush=True)
    try:
        database = db.get_database(url, migrate_on_start=False)
        if args.reuse:
            with database.connect() as c:
                n = int(scalar(c, "SELECT coalesce(max(position), 0) FROM events"))
            info = {"rounds": 0, "events": n, "build_s": float("nan")}
        else:
            print(f"building a log of >= {args.events:,} events ...", file=sys.stderr, flush=True)
            info = build(database, args.events)
        owner = db.get_database(url, migrate_on_start=False, owner=True)
        metrics = (
            []
            if args.analytics_only
            else measure(database, info, args.reps, verify=not args.no_verify, owner=owner)
        )
        metrics += measure_analytics(database, min(args.reps, 20))
    finally:
        if args.keep or args.reuse:
            print(f"database kept: {url}", file=sys.stderr)
        else:
            drop_database(url)
    name = (
        "audit-analytics"
        if args.analytics_only
        else "audit"
        if args.events == DEFAULT_EVENTS
        else f"audit-{args.events}-{BIG_PODS}"
    )
    print_table(f"audit at scale (bench/results/{name}.json)", metrics)
    write(name, metrics)


if __name__ == "__main__":
    from api.process import tune_gc

    tune_gc()
    main()
