"""Retry compaction (``python -m bench.retries [--pods N] [--minutes M]``, issue 14 item 3).

A steady stream of unchanging pending work: ``--pods`` (default 2,000) plain pods that fit no node
and one gang that never reaches its quorum's resources, left alone for ``--minutes`` (default 10)
virtual minutes. The scheduler retries them at each backoff expiry and unschedulable-pool flush
(``advance``: every timer in order, as ``simulate`` does). Measured: events the log gains per retry
(goal <= 1), the largest payload of those events in canonical JSON bytes (goal <= 100), and the
same run with compaction off (every retry recorded in full) as the baseline. Writes
bench/results/retries.json.
"""

from __future__ import annotations

import argparse
from typing import Any

import orjson

from bench.common import Metric, print_table, write

NS = "retry"


def manifests(pods: int) -> list[dict[str, Any]]:
    """Two small nodes, ``pods`` plain pods asking for more CPU than a node has, and a 2-pod gang
    whose pods do not fit either."""
    out: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"node-{i}"},
            "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}},
        }
        for i in range(2)
    ]

    def pod(name: str, group: str | None = None) -> dict[str, Any]:
        spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "64"}}}]}
        if group:
            spec["schedulingGroup"] = {"podGroupName": group}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS}, "spec": spec}

    out.append(
        {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "gang", "namespace": NS},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
        }
    )
    out += [pod(f"gang-{i}", "gang") for i in range(2)]
    out += [pod(f"p-{i:05d}") for i in range(pods)]
    return out


def run(database: Any, pods: int, minutes: float, *, compact: bool = True) -> dict[str, Any]:
    """Apply the pending work, schedule it once, then advance ``minutes`` virtual minutes.

    Returns {first_position (first event after the first attempts), retries (cycles run after
    them), events (events they appended), types (event type -> count), max_bytes (largest
    payload, canonical JSON), mean_bytes}."""
    from api.services.simulate import Simulation
    from ledger.sql import scalar

    sim = Simulation(database, {}, "retry-stream")
    sim.bridge.compact_retries = compact
    sim.run([{"apply": manifests(pods)}])
    with database.connect() as c:
        first = int(scalar(c, "SELECT coalesce(max(position), 0) FROM events")) + 1
    cycles = [0]
    sim.bridge.on_cycle = lambda _res: cycles.__setitem__(0, cycles[0] + 1)
    sim.run([{"advance": f"{minutes * 60:g}s"}])
    with database.connect() as c:
        rows = c.execute(
            "SELECT type, data FROM events WHERE position >= %s ORDER BY position", (first,)
        ).fetchall()
    sizes = [len(orjson.dumps(d)) for _, d in rows]
    types: dict[str, int] = {}
    for t, _ in rows:
        types[t] = types.get(t, 0) + 1
    return {
        "first_position": first,
        "retries": cycles[0],
        "events": len(rows),
        "types": types,
        "max_bytes": max(sizes, default=0),
        "mean_bytes": sum(sizes) / len(sizes) if sizes else 0.0,
    }


def measure(url_factory: Any, pods: int, minutes: float) -> list[Metric]:
    from ledger import db

    out = {}
    for compact in (False, True):
        url = url_factory[0]()
        try:
            out[compact] = run(db.get_database(url, migrate_on_start=False), pods, minutes, compact=compact)
        finally:
            url_factory[1](url)
    new, old = out[True], out[False]
    per_new = new["events"] / max(1, new["retries"])
    per_old = old["events"] / max(1, old["retries"])
    return [
        Metric(
            f"events per retry ({pods:,} pending pods + 1 gang, {minutes:g} virtual min, {new['retries']:,} retries)",
            per_new,
            "events",
            "every retry recorded in full",
            per_old,
            per_new / per_old if per_old else None,
            "value <= 1",
            per_new <= 1,
        ),
        Metric(
            "largest payload of a retry event",
            float(new["max_bytes"]),
            "bytes",
            "every retry recorded in full (largest)",
            float(old["max_bytes"]),
            new["max_bytes"] / old["max_bytes"] if old["max_bytes"] else None,
            "value <= 100",
            new["max_bytes"] <= 100,
        ),
        Metric(
            "bytes a retry adds (mean payload x events per retry)",
            new["mean_bytes"] * per_new,
            "bytes",
            "every retry recorded in full",
            old["mean_bytes"] * per_old,
            (new["mean_bytes"] * per_new) / (old["mean_bytes"] * per_old) if old["events"] else None,
            "(reported)",
            True,
        ),
    ]


def main(argv: list[str] | None = None) -> None:
    from bench.append import drop_database, fresh_database

    ap = argparse.ArgumentParser(prog="python -m bench.retries", description=__doc__.splitlines()[0])
    ap.add_argument("--pods", type=int, default=2_000)
    ap.add_argument("--minutes", type=float, default=10.0)
    args = ap.parse_args(argv)
    metrics = measure((fresh_database, drop_database), args.pods, args.minutes)
    print_table("retry compaction (bench/results/retries.json)", metrics)
    write("retries", metrics)


if __name__ == "__main__":
    from api.process import tune_gc

    tune_gc()
    main()
