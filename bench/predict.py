"""Backtest of the predicted start (``python -m bench.predict``, issue 34) on the openb trace made
contended.

The trace (``bench/trace.py``'s reader and manifests; folder ``PODLEDGER_TRACE_DIR``, default
``/work/shared/data/openb`` next to the repository) is replayed through the real ledger on a
seeded subset of its nodes (``--node-share``, default 8 % of the 1,523 nodes, seed 34): the
whole cluster is so lightly loaded that almost nothing waits; on about a twelfth of it the GPU
tasks queue behind each other for minutes to hours, which is the regime a prediction is for.
Tasks are put in a namespace per QoS class (``openb-ls``, ``openb-be``, ...) so that the
per-namespace baselines have something to tell apart. Each task runs for its trace lifetime
(``deletion_time - creation_time``) from the moment it is bound (not until its trace deletion
time, which would shorten the lives of tasks that waited); a task without a deletion time runs
to the end of the replay.

When a task is still pending after the scheduling round of its arrival, podledger's estimate
is taken from the ledger alone at that position (``api.services.predict``), and so are two
baselines from the same run: an exponential moving average of the waits of the namespace's
tasks that waited and have started (alpha 0.2; kueue#13159's proposal) and the median of those
waits. Its actual start is read from the same replay. Reported: median and p90 absolute relative
error ``|predicted - actual| / actual`` of the p50 of each, the share of actual waits at or
below podledger's p90 (coverage), the cases, and whether the goals are met (median error
<= 25 %; <= 0.6x the EMA's median error; p90 covers >= 85 %). Writes bench/results/predict.json.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import random
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.common import Metric, print_table, write
from bench.openb import (
    EPOCH,
    NODE_FILE,
    POD_FILE,
    node_manifest,
    pod_manifest,
    priority_class_manifests,
    read_nodes,
    read_tasks,
    trace_dir,
)
from bench.openb import load as load_manifests

ALPHA = 0.2
DEBUG = os.environ.get("PODLEDGER_PREDICT_DEBUG") == "1"
# a folder: each case's estimator inputs and the ledger rows they come from, pickled (for study)
DUMP = os.environ.get("PODLEDGER_PREDICT_DUMP")


def _namespace(qos: str) -> str:
    return f"openb-{qos.lower()}"


def _rel(pred: float | None, actual: float) -> float:
    if pred is None:
        return float("inf")
    return abs(pred - actual) / actual


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * (len(s) - 1) + 0.5))] if s else float("nan")


def run(folder: Path, share: float, seed: int, limit: int, horizon_days: float) -> dict[str, Any]:
    from api.services.commands import objects as commands
    from api.services.predict import predict
    from api.services.simulate import private_ledger
    from ledger.sql import scalar
    from scheduler import decisions as d
    from scheduler.edge.bridge import Bridge, from_ts

    nodes = read_nodes(folder / NODE_FILE)
    rng = random.Random(seed)
    chosen = sorted(rng.sample(nodes, max(1, round(len(nodes) * share))), key=lambda n: n.name)
    tasks = read_tasks(folder / POD_FILE, limit)
    by_key = {f"{_namespace(t.qos)}/{t.name}": t for t in tasks}
    arrivals: dict[int, list[Any]] = defaultdict(list)
    for t in tasks:
        arrivals[t.created].append(t)
    t_start = time.perf_counter()
    started: dict[str, float] = {}
    ends: list[tuple[float, str]] = []
    waits_seen: dict[str, list[float]] = defaultdict(list)  # namespace -> waits (> 0) in start order
    ema: dict[str, float] = {}
    cases: list[dict[str, Any]] = []
    predict_s = 0.0
    with private_ledger() as database:
        bridge = Bridge(database, actor="bench-predict")

        def apply(manifests: list[dict[str, Any]], at: float, source: str) -> None:
            objs = load_manifests(manifests, source)
            with database.unit_of_work() as uow:
                res = commands.apply_objects(
                    uow, objs, actor="bench-predict", source=source, effective_at=from_ts(at)
                )
                if not res.ok:
                    raise RuntimeError(res.errors[:3])
                uow.commit()

        def delete(keys: list[str], at: float) -> None:
            with database.unit_of_work() as uow:
                commands.delete_objects(
                    uow,
                    [("Pod", k.partition("/")[0], k.partition("/")[2]) for k in keys],
                    actor="bench-predict",
                    effective_at=from_ts(at),
                )
                uow.commit()

        def schedule(at: float) -> None:
            for r in bridge.run_until_idle(at):
                for dec in r.decisions:
                    if isinstance(dec, d.PodBound) and dec.pod in by_key and dec.pod not in started:
                        task = by_key[dec.pod]
                        started[dec.pod] = r.now
                        wait = r.now - (EPOCH + task.created)
                        ns = dec.pod.split("/", 1)[0]
                        if wait > 0:
                            waits_seen[ns].append(wait)
                            ema[ns] = wait if ns not in ema else ALPHA * wait + (1 - ALPHA) * ema[ns]
                        if task.deleted is not None:
                            heapq.heappush(ends, (r.now + max(task.deleted - task.created, 1), dec.pod))

        now = EPOCH
        apply(priority_class_manifests() + [node_manifest(n) for n in chosen], now, "nodes")
        times = sorted(arrivals)
        last_arrival = EPOCH + times[-1]
        horizon = last_arrival + horizon_days * 86400
        i = 0
        while True:
            nxt_arrival = EPOCH + times[i] if i < len(times) else None
            nxt_end = ends[0][0] if ends else None
            cands = [x for x in (nxt_arrival, nxt_end) if x is not None]
            if not cands:
                break
            nxt = min(cands)
            if nxt > horizon:
                break
            # scheduler timers (backoff retries) due before it
            while True:
                timer = bridge.scheduler.next_timer(now)
                if timer is None or timer > nxt:
                    break
                now = max(now, timer)
                schedule(now)
            now = nxt
            gone = []
            while ends and ends[0][0] <= now:
                gone.append(heapq.heappop(ends)[1])
            if gone:
                delete(sorted(gone), now)
            new: list[str] = []
            if nxt_arrival is not None and nxt_arrival <= now:
                batch = arrivals[times[i]]
                i += 1
                manifests = []
                for t in batch:
                    m = pod_manifest(t)
                    m["metadata"]["namespace"] = _namespace(t.qos)
                    manifests.append(m)
                    new.append(f"{_namespace(t.qos)}/{t.name}")
                apply(manifests, now, f"t={times[i - 1]}")
            schedule(now)
            waiting = [k for k in new if k not in started]
            if waiting:
                with database.connect() as c:
                    head = int(scalar(c, "SELECT max(position) FROM events"))
                    for key in waiting:
                        ns, name = key.split("/", 1)
                        t0 = time.perf_counter()
                        est = predict(c, "Pod", ns, name, head)
                        if DEBUG and est is not None and est.p50_seconds == 0:
                            from api.services.predict import inputs_at

                            inp = inputs_at(c, "Pod", ns, name, head)
                            assert inp is not None
                            el = sorted(inp.demand.eligible or ())
                            msg = c.execute(
                                "SELECT type, data->>'message' FROM events WHERE stream = %s AND type = 'PodUnschedulable' ORDER BY position DESC LIMIT 1",
                                (f"sched/pod/{key}",),
                            ).fetchone()
                            print(
                                "DEBUG fits now:",
                                key,
                                msg,
                                inp.demand.requests,
                                [(n, inp.free[n]) for n in el][:4],
                                file=sys.stderr,
                            )
                        predict_s += time.perf_counter() - t0
                        if DUMP:
                            _dump(c, Path(DUMP), len(cases), key, head, now)
                        seen = waits_seen.get(ns) or []
                        cases.append(
                            {
                                "pod": key,
                                "pending_at": now,
                                "p50": est.p50_seconds if est else None,
                                "p90": est.p90_seconds if est else None,
                                "point": est.point_seconds if est else None,
                                "cases": est.cases if est else 0,
                                "ema": ema.get(ns),
                                "median": statistics.median(seen) if seen else None,
                            }
                        )
            if i >= len(times) and (not ends or all(case["pod"] in started for case in cases)):
                break  # every arrival is in and nothing more can end (or every case has started)
        wall = time.perf_counter() - t_start
    for case in cases:
        case["actual"] = started[case["pod"]] - case["pending_at"] if case["pod"] in started else None
    return {"cases": cases, "nodes": len(chosen), "tasks": len(tasks), "wall_s": wall, "predict_s": predict_s}


def _dump(c: Any, folder: Path, index: int, key: str, head: int, now: float) -> None:
    import pickle

    from api.services.predict import _LIFETIMES, inputs_at
    from scheduler.edge.bridge import from_ts

    ns, name = key.split("/", 1)
    bound = c.execute(
        "SELECT namespace, name, status FROM object_versions WHERE kind = 'Pod' AND valid_from <= %s"
        " AND valid_to > %s AND status->>'phase' = 'Bound'",
        (head, head),
    ).fetchall()
    lifetimes = c.execute(_LIFETIMES, {"p": head, "t": from_ts(now)}).fetchall()
    doc = {"key": key, "inputs": inputs_at(c, "Pod", ns, name, head), "bound": bound, "lifetimes": lifetimes}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{index:05d}.pkl").write_bytes(pickle.dumps(doc))


def summarize(res: dict[str, Any], share: float, seed: int) -> tuple[list[Metric], dict[str, Any]]:
    done = [c for c in res["cases"] if c["actual"] is not None and c["actual"] > 0]
    errs = {k: [_rel(c[k], c["actual"]) for c in done] for k in ("p50", "point", "ema", "median")}
    ours_med, ema_med, med_med = (_pct(errs[k], 0.5) for k in ("p50", "ema", "median"))
    covered = [c for c in done if c["p90"] is None or c["actual"] <= c["p90"] + 1e-6]
    coverage = len(covered) / len(done) if done else float("nan")
    goals = {
        "median_error_le_25pct": ours_med <= 0.25,
        "le_0_6x_ema_median_error": ours_med <= 0.6 * ema_med,
        "p90_coverage_ge_85pct": coverage >= 0.85,
    }
    # the waits for capacity alone: without the cases that start on the retry right after their
    # own preemption made room (actual <= 2 s), which the backoff bound predicts exactly
    slow = [c for c in done if c["actual"] > 2.0]
    slow_errs = {k: [_rel(c[k], c["actual"]) for c in slow] for k in ("p50", "ema", "median")}
    summary = {
        "capacity_waits_only": {
            "cases": len(slow),
            "podledger_median_abs_rel_error": _pct(slow_errs["p50"], 0.5),
            "ema_median_abs_rel_error": _pct(slow_errs["ema"], 0.5),
            "median_baseline_median_abs_rel_error": _pct(slow_errs["median"], 0.5),
            "p90_coverage": (
                sum(1 for c in slow if c["p90"] is None or c["actual"] <= c["p90"] + 1e-6) / len(slow)
                if slow
                else float("nan")
            ),
        },
        "node_share": share,
        "seed": seed,
        "nodes": res["nodes"],
        "tasks": res["tasks"],
        "pending_cases": len(res["cases"]),
        "started_cases": len(done),
        "never_started": sum(1 for c in res["cases"] if c["actual"] is None),
        "podledger_point": {
            "median_abs_rel_error": _pct(errs["point"], 0.5),
            "p90_abs_rel_error": _pct(errs["point"], 0.9),
            "what": "the estimate with the least expected relative error (1/wait-weighted median of the draws)",
        },
        "podledger": {
            "median_abs_rel_error": ours_med,
            "p90_abs_rel_error": _pct(errs["p50"], 0.9),
            "p90_coverage": coverage,
        },
        "ema_baseline": {
            "median_abs_rel_error": ema_med,
            "p90_abs_rel_error": _pct(errs["ema"], 0.9),
            "alpha": ALPHA,
        },
        "median_baseline": {"median_abs_rel_error": med_med, "p90_abs_rel_error": _pct(errs["median"], 0.9)},
        "goals": goals,
        "replay_wall_s": res["wall_s"],
        "prediction_s": res["predict_s"],
        "median_cases_behind_estimate": _pct([float(c["cases"]) for c in done], 0.5),
    }
    metrics = [
        Metric(
            "predicted start: median abs relative error (p50 vs actual)",
            ours_med,
            "fraction",
            "EMA of the namespace's recent waits (alpha 0.2), same run",
            ema_med,
            ours_med / ema_med if ema_med else None,
            "value <= 0.25 and ratio <= 0.6",
            goals["median_error_le_25pct"] and goals["le_0_6x_ema_median_error"],
        ),
        Metric(
            "predicted start, least-relative-error point: median abs relative error",
            summary["podledger_point"]["median_abs_rel_error"],
            "fraction",
            "EMA of the namespace's recent waits (alpha 0.2), same run",
            ema_med,
            summary["podledger_point"]["median_abs_rel_error"] / ema_med if ema_med else None,
            "(reported) value <= 0.25 and ratio <= 0.6",
            True,
        ),
        Metric(
            "predicted start: median abs relative error vs the namespace's median past wait",
            ours_med,
            "fraction",
            "median past wait of the namespace, same run",
            med_med,
            ours_med / med_med if med_med else None,
            "(reported)",
            True,
        ),
        Metric(
            "predicted start: p90 abs relative error",
            summary["podledger"]["p90_abs_rel_error"],
            "fraction",
            "EMA baseline",
            summary["ema_baseline"]["p90_abs_rel_error"],
            None,
            "(reported)",
            True,
        ),
        Metric(
            "predicted start: p90 bound covers the actual start",
            coverage,
            "fraction",
            None,
            None,
            None,
            f"value >= 0.85 ({len(done)} cases)",
            goals["p90_coverage_ge_85pct"],
        ),
    ]
    return metrics, summary


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.predict", description=__doc__.splitlines()[0])
    ap.add_argument("--node-share", type=float, default=0.08)
    ap.add_argument("--seed", type=int, default=34)
    ap.add_argument("--limit", type=int, default=3000, help="the first N tasks of the trace")
    ap.add_argument("--horizon-days", type=float, default=30.0, help="replay this long past the last arrival")
    ap.add_argument(
        "--name", default="predict", help="results as bench/results/NAME.json and NAME-cases.json"
    )
    ap.add_argument(
        "--resummarize", action="store_true", help="recompute the summary of bench/results/predict.json"
    )
    args = ap.parse_args(argv)
    if args.resummarize:
        path = Path(__file__).resolve().parent / "results" / f"{args.name}.json"
        doc = json.loads(path.read_text())
        old = doc["summary"]
        res = {
            "cases": doc["cases"],
            "nodes": old["nodes"],
            "tasks": old["tasks"],
            "wall_s": old["replay_wall_s"],
            "predict_s": old["prediction_s"],
        }
        _metrics, doc["summary"] = summarize(res, old["node_share"], old["seed"])
        path.write_text(json.dumps(doc, indent=2) + "\n")
        print(json.dumps(doc["summary"], indent=2))
        return
    folder = trace_dir()
    if folder is None:
        print("bench.predict: no openb trace (PODLEDGER_TRACE_DIR); skipped")
        return
    res = run(folder, args.node_share, args.seed, args.limit, args.horizon_days)
    # the cases first: an error in the summary loses no run
    cases = Path(__file__).resolve().parent / "results" / f"{args.name}-cases.json"
    cases.parent.mkdir(exist_ok=True)
    cases.write_text(json.dumps(res, default=str))
    metrics, summary = summarize(res, args.node_share, args.seed)
    print_table("predicted start backtest (bench/results/predict.json)", metrics)
    path = write(args.name, metrics)
    doc = json.loads(path.read_text())
    doc["summary"] = summary
    doc["cases"] = res["cases"]
    path.write_text(json.dumps(doc, indent=2) + "\n")
    print(json.dumps(summary, indent=2), file=sys.stderr)


if __name__ == "__main__":
    main()
