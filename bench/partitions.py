"""Append speed on the partitioned log vs the plain table (``python -m bench.partitions``).

Three databases on one server, written in the same run, interleaved batch by batch (the writer
order rotates) and append by append, so load on a shared machine hits all alike:

- ``plain``: migrated to 0015, the unpartitioned ``events`` with its two unique indexes;
- ``partitioned``: the head schema (migration 0016) with 1,000,000-position partitions: the
  run stays in one partition; event ids and stream versions are checked in ``event_keys``;
- ``partitioned, 10k``: partitions of 10,000 positions: the batches cross a boundary every
  ten appends.

Measured: batched appends (1,000 events per append, COPY) in events/s and single-event
appends (one round trip each) p50 latency. The same ``ledger.store.append`` code writes to all
three (it needs ``event_keys`` only for caller-chosen event ids, which these events lack).
"""

from __future__ import annotations

import os
import statistics
import time
import uuid
from contextlib import contextmanager
from typing import Any

import psycopg
from alembic.config import Config

from alembic import command
from bench.append import pod_payload
from bench.common import Metric, print_table, ratio_metric, write
from ledger import db, store
from ledger.store import NewEvent

N_BATCHED = 40_000
BATCH = 1_000
N_SINGLE = 400


@contextmanager
def _env(**values: str) -> Any:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _database(revision: str, size: int | None = None) -> str:
    base = db.server_url()
    name = f"podledger_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(db.with_database(db.libpq_url(base), "postgres"), autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    url = db.with_database(db.libpq_url(base), name)
    cfg = Config(str(db.ROOT / "alembic.ini"))
    cfg.set_main_option("script_location", str(db.ROOT / "alembic"))
    cfg.set_main_option("version_locations", str(db.ROOT / "migrations" / "versions"))
    cfg.attributes["url"] = url
    ahead = str((N_BATCHED + 2 * BATCH + N_SINGLE) // (size or 1_000_000) + 2)
    with _env(PODLEDGER_PARTITION_SIZE=str(size or 1_000_000), PODLEDGER_PARTITIONS_AHEAD=ahead):
        command.upgrade(cfg, revision)
    return url


def _drop(url: str) -> None:
    with psycopg.connect(db.with_database(url, "postgres"), autocommit=True) as c:
        c.execute(f'DROP DATABASE IF EXISTS "{db.database_name(url)}" WITH (FORCE)')


def run() -> list[Metric]:
    targets = {
        "plain": _database("0015"),
        "partitioned": _database("head"),
        "partitioned, 10k": _database("head", 10_000),
    }
    try:
        databases = {k: db.get_database(u, migrate_on_start=False) for k, u in targets.items()}
        names = list(databases)
        for database in databases.values():  # warm-up
            with database.connect() as conn:  # autocommit: each append its own transaction
                store.append(
                    conn, [NewEvent(f"warm/{i}", "PodCreated", pod_payload(i)) for i in range(BATCH)]
                )
        spent = dict.fromkeys(names, 0.0)
        for b in range(N_BATCHED // BATCH):
            batch = [
                NewEvent(f"pod/bench/p{b * BATCH + i}", "PodCreated", pod_payload(b * BATCH + i))
                for i in range(BATCH)
            ]
            for k in names[b % len(names) :] + names[: b % len(names)]:
                t0 = time.perf_counter()
                with databases[k].connect() as conn:
                    store.append(conn, batch)
                spent[k] += time.perf_counter() - t0
        rate = {k: N_BATCHED / spent[k] for k in names}
        single: dict[str, list[float]] = {k: [] for k in names}
        for i in range(N_SINGLE):
            ev = [NewEvent(f"single/{i}", "PodCreated", pod_payload(i))]
            for k in names[i % len(names) :] + names[: i % len(names)]:
                t0 = time.perf_counter()
                with databases[k].connect() as conn:
                    store.append(conn, ev)
                single[k].append(time.perf_counter() - t0)
        p50 = {k: statistics.median(v) * 1000 for k, v in single.items()}
        with psycopg.connect(targets["partitioned, 10k"]) as c:
            parts = c.execute(
                "SELECT count(*) FROM ledger_event_partitions() WHERE NOT is_default"
            ).fetchone()
            default_rows = c.execute("SELECT count(*) FROM events_default").fetchone()
        assert default_rows is not None and default_rows[0] == 0  # every row in a range partition
        n_parts = int(parts[0]) if parts else 0
    finally:
        db.dispose_all()
        for url in targets.values():
            _drop(url)

    return [
        ratio_metric(
            "batched append (1,000/append), 1M partitions",
            rate["partitioned"],
            "events/s",
            "plain table (0015), interleaved",
            rate["plain"],
            0.8,
        ),
        ratio_metric(
            f"batched append (1,000/append), 10k partitions ({n_parts})",
            rate["partitioned, 10k"],
            "events/s",
            "plain table (0015), interleaved",
            rate["plain"],
            0.8,
        ),
        ratio_metric(
            "single-event append p50, 1M partitions",
            p50["partitioned"],
            "ms",
            "plain table (0015) p50, alternating",
            p50["plain"],
            1.2,
            higher_is_better=False,
        ),
        ratio_metric(
            "single-event append p50, 10k partitions",
            p50["partitioned, 10k"],
            "ms",
            "plain table (0015) p50, alternating",
            p50["plain"],
            1.2,
            higher_is_better=False,
        ),
    ]


def main() -> None:
    metrics = run()
    print_table("append on the partitioned log (bench/results/partitions.json)", metrics)
    write("partitions", metrics)


if __name__ == "__main__":
    from api.process import tune_gc

    tune_gc()
    main()
