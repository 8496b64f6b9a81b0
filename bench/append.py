"""Append and replay benchmark (``python -m bench.append``), all on one database, one run.

- batched append (1,000 events per append) events/s vs a raw COPY of the same rows into a
  trigger-less copy of the table, 1,000 rows per commit (goal: ratio >= 0.7);
- single-event append latency vs one bare INSERT + COMMIT (goal: ratio <= 2);
- ordered replay into memory (lean rows of ``ledger/replay_rows.py`` on a raw connection,
  every payload decoded with orjson) in events/s (goal >= 150,000/s) vs a raw ordered read of
  the same rows without decoding;
- batched append and replay vs the ``eventsourcing`` library's PostgreSQL recorder on the same
  events in the same database (goal: ratio >= 1.5 on both);
- the scheduler's empty catch-up read (``store.read_tail``: one prepared statement on a pooled
  connection in autocommit mode) vs ``store.read_all`` on the same kind of connection
  (unprepared; informational, lower is better).

The machine may be shared: every comparison is measured interleaved with its peer in the same
run (batch by batch for appends, alternating single appends, alternating replay rounds), so the
ratios hold even when the absolute numbers move with the load.
"""

from __future__ import annotations

import os
import statistics
import time
import uuid

import orjson
import psycopg

from bench.common import Metric, print_table, ratio_metric, write
from ledger import db, replay_rows, store
from ledger.database import Database
from ledger.store import NewEvent

N_BATCHED = 50_000
BATCH = 1_000
N_SINGLE = 400
N_TAIL = 400


def pod_payload(i: int) -> dict:
    return {
        "object": {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"p{i}", "namespace": "bench", "uid": f"u{i}"},
            "spec": {
                "containers": [{"name": "c", "resources": {"requests": {"cpu": 500, "memory": 1 << 30}}}],
                "priority": 100,
                "schedulerName": "default-scheduler",
            },
        }
    }


def fresh_database() -> str:
    base = db.server_url()
    name = f"podledger_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(db.with_database(db.libpq_url(base), "postgres"), autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    url = db.with_database(db.libpq_url(base), name)
    db.migrate(url)
    return url


def drop_database(url: str) -> None:
    db.dispose_all()
    with psycopg.connect(db.with_database(url, "postgres"), autocommit=True) as c:
        c.execute(f'DROP DATABASE IF EXISTS "{db.database_name(url)}" WITH (FORCE)')


ROUNDS = 3  # replay rounds, interleaved with the peers
# BENCH_ONLY=replay: store the same events (untimed) and measure only the replay comparisons;
# BENCH_ONLY=append: measure only the batched append comparisons.
ONLY = os.environ.get("BENCH_ONLY", "")


def run() -> list[Metric]:
    url = fresh_database()
    try:
        database = db.get_database(url, migrate_on_start=False)
        raw = psycopg.connect(url)
        raw.execute(
            "CREATE TABLE bench_raw (LIKE events INCLUDING DEFAULTS INCLUDING IDENTITY INCLUDING INDEXES)"
        )
        # events is partitioned (migration 0016): the uniqueness of event ids and stream versions
        # lives in event_keys, which LIKE does not copy. The baseline gets the two unique indexes
        # a plain events table had (events' own indexes come with LIKE), so it still pays for
        # the uniqueness our append pays for; our side table's heap and trigger are our cost.
        raw.execute("ALTER TABLE bench_raw ADD UNIQUE (event_id), ADD UNIQUE (stream, version)")
        raw.execute(
            "CREATE TABLE bench_single (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, stream text, data jsonb)"
        )
        raw.commit()
        es = _EventsourcingPeer(url)

        # warm-up (all three writers)
        warm = [NewEvent(f"warm/{i}", "PodCreated", pod_payload(i)) for i in range(BATCH)]
        with database.connect() as conn:  # autocommit: each append its own transaction
            store.append(conn, warm)
        es.append(warm)

        # 1. batched append: ours, a raw COPY of the same rows, and the eventsourcing recorder,
        # interleaved batch by batch so that load on the shared machine hits all three alike.
        batches = [
            [
                NewEvent(f"pod/bench/p{b * BATCH + i}", "PodCreated", pod_payload(b * BATCH + i))
                for i in range(BATCH)
            ]
            for b in range(N_BATCHED // BATCH)
        ]
        t_ours = t_copy = t_es = 0.0
        cpu = _CpuMeter(url)
        c_ours = c_copy = c_es = 0.0
        after = BATCH
        for batch in batches if ONLY != "replay" else ():
            c0 = cpu.now()
            t0 = time.perf_counter()
            with database.connect() as conn:
                store.append(conn, batch)
            t_ours += time.perf_counter() - t0
            c_ours += cpu.now() - c0
            with raw.cursor() as cur:  # the rows just stored, fresh ids (not timed)
                cur.execute(
                    "SELECT stream, version, type, schema_version, event_id, data::text, meta::text, effective_at, "
                    "prev_hash, hash, recorded_at FROM events WHERE position > %s ORDER BY position LIMIT %s",
                    (after, BATCH),
                )
                rows = [(r[0], r[1], r[2], r[3], uuid.uuid4(), *r[5:]) for r in cur.fetchall()]
            raw.commit()
            after += BATCH
            c0 = cpu.now()
            t0 = time.perf_counter()
            with (
                raw.cursor() as cur,
                cur.copy(
                    "COPY bench_raw (stream, version, type, schema_version, event_id, data, meta, effective_at, "
                    "prev_hash, hash, recorded_at) FROM STDIN"
                ) as copy,
            ):
                for r in rows:
                    copy.write_row(r)
            raw.commit()
            t_copy += time.perf_counter() - t0
            c_copy += cpu.now() - c0
            c0 = cpu.now()
            t_es += es.append(batch)
            c_es += cpu.now() - c0
        if ONLY == "replay":
            for batch in batches:
                with database.connect() as conn:
                    store.append(conn, batch)
                es.append(batch)
            only_replay = _replay(url, database, raw, es, cpu)[0]
            raw.close()
            es.close()
            cpu.close()
            return only_replay
        ours = N_BATCHED / t_ours
        copy_rate = N_BATCHED / t_copy
        es_append = N_BATCHED / t_es
        if ONLY == "append":
            raw.close()
            es.close()
            cpu.close()
            return _append_metrics(ours, copy_rate, es_append, c_ours, c_copy, c_es)

        # 2. single-event append latency vs bare INSERT + COMMIT, alternating
        single: list[float] = []
        bare: list[float] = []
        payload = orjson.dumps(pod_payload(0)).decode()
        singles = [NewEvent(f"single/{i}", "PodCreated", pod_payload(i)) for i in range(N_SINGLE)]
        for i in range(N_SINGLE):
            t0 = time.perf_counter()
            with database.connect() as conn:
                store.append(conn, [singles[i]])
            single.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            raw.execute(
                "INSERT INTO bench_single (stream, data) VALUES (%s, %s::jsonb)", (f"single/{i}", payload)
            )
            raw.commit()
            bare.append(time.perf_counter() - t0)
        single_ms = statistics.median(single) * 1000
        bare_ms = statistics.median(bare) * 1000

        replay, total = _replay(url, database, raw, es, cpu)

        # 4. the scheduler's catch-up read when nothing is new (its steady state between
        # appends): store.read_tail (a prepared statement) vs read_all (unprepared), each on a
        # pooled connection in autocommit mode, alternating.
        tail_raw: list[float] = []
        tail_all: list[float] = []
        for _ in range(N_TAIL):
            t0 = time.perf_counter()
            with database.connect() as conn:
                store.read_tail(conn, total, 1000)
            tail_raw.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            with database.connect() as conn:
                store.read_all(conn, after=total, limit=1000)
            tail_all.append(time.perf_counter() - t0)
        tail_raw_us = statistics.median(tail_raw) * 1e6
        tail_all_us = statistics.median(tail_all) * 1e6
        raw.close()
        es.close()
        cpu.close()
    finally:
        drop_database(url)

    batched = _append_metrics(ours, copy_rate, es_append, c_ours, c_copy, c_es)
    return [
        batched[0],
        ratio_metric(
            "single-event append p50",
            single_ms,
            "ms",
            "bare INSERT + COMMIT p50",
            bare_ms,
            2.0,
            higher_is_better=False,
        ),
        replay[0],
        batched[1],
        replay[1],
        ratio_metric(
            "empty catch-up read p50 (store.read_tail, pooled connection)",
            tail_raw_us,
            "us",
            "read_all on a pooled autocommit connection p50",
            tail_all_us,
            1.0,
            higher_is_better=False,
        ),
        *batched[2:],
        replay[2],
    ]


def _append_metrics(
    ours: float, copy_rate: float, es_append: float, c_ours: float, c_copy: float, c_es: float
) -> list[Metric]:
    """The batched append against raw COPY and eventsourcing, then the CPU per event of each."""
    return [
        ratio_metric(
            "batched append (1,000/append)", ours, "events/s", "raw COPY, 1,000 rows/commit", copy_rate, 0.7
        ),
        ratio_metric(
            "batched append vs eventsourcing",
            ours,
            "events/s",
            "eventsourcing PostgresApplicationRecorder (interleaved)",
            es_append,
            1.5,
        ),
        # CPU seconds (this process + the database's backends) per event: what the wall-clock
        # ratios become when the machine is not shared. Informational.
        _cpu_metric("batched append CPU (client + server)", c_ours, "raw COPY", c_copy, N_BATCHED),
        _cpu_metric("batched append CPU (client + server)", c_ours, "eventsourcing", c_es, N_BATCHED),
    ]


def _replay(
    url: str, database: Database, raw: psycopg.Connection, es: _EventsourcingPeer, cpu: _CpuMeter
) -> tuple[list[Metric], int]:
    """3. ordered replay rounds (ours, raw read, eventsourcing interleaved): three metrics, events."""
    # 3. ordered replay into memory: lean rows (ledger/replay_rows.py) on a raw connection,
    # every payload decoded, vs a raw ordered read without decoding and vs the eventsourcing
    # recorder's select_notifications + orjson; ROUNDS interleaved rounds, best of each.
    with database.connect() as conn:
        total = store.head(conn)
    reader = replay_rows.connect(url)
    replay_rate = raw_read_rate = es_read = 0.0
    rc_ours = rc_es = float("inf")
    for _ in range(ROUNDS):
        c0 = cpu.now()
        t0 = time.perf_counter()
        state: dict[str, int] = {}
        n = 0
        for ev in replay_rows.iter_rows(reader):  # pipelined pages of 10,000
            ev.data  # noqa: B018  (every payload decoded as the folds read it: upcast when older)
            state[ev.stream] = ev.version
            n += 1
        replay_rate = max(replay_rate, n / (time.perf_counter() - t0))
        rc_ours = min(rc_ours, cpu.now() - c0)
        t0 = time.perf_counter()
        with raw.transaction(), raw.cursor(name="rawread") as cur:
            cur.itersize = 10_000
            cur.execute("SELECT position, stream, version, type, data::text FROM events ORDER BY position")
            m = sum(1 for _ in cur)
        raw_read_rate = max(raw_read_rate, m / (time.perf_counter() - t0))
        c0 = cpu.now()
        es_read = max(es_read, es.read_rate())
        rc_es = min(rc_es, cpu.now() - c0)
        assert n == total == m
    reader.close()

    return [
        Metric(
            "ordered replay into memory (lean rows, orjson)",
            replay_rate,
            "events/s",
            "raw ordered read, no decode",
            raw_read_rate,
            replay_rate / raw_read_rate,
            "value >= 150,000/s",
            replay_rate >= 150_000,
        ),
        ratio_metric(
            "ordered replay vs eventsourcing",
            replay_rate,
            "events/s",
            "eventsourcing select_notifications + orjson (interleaved)",
            es_read,
            1.5,
        ),
        _cpu_metric("ordered replay CPU (client + server)", rc_ours, "eventsourcing", rc_es, total),
    ], total


def _cpu_metric(name: str, ours: float, peer: str, theirs: float, events: int) -> Metric:
    us, peer_us = ours / events * 1e6, theirs / events * 1e6
    ratio = peer_us / us if us else float("nan")
    return Metric(
        f"{name} vs {peer}", us, "us/event", f"{peer}, same run", peer_us, ratio, "(speed ratio)", True
    )


class _CpuMeter:
    """CPU seconds used so far by this process and by the whole PostgreSQL server: every live
    child of the postmaster (backends, WAL writer, checkpointer, ...) plus the children it has
    reaped (its cutime/cstime), read from /proc, so only for a server on this machine (the
    server part is 0 otherwise). Ticks are 10 ms: meaningful summed over many batches."""

    def __init__(self, url: str) -> None:
        import os

        self.tick = os.sysconf("SC_CLK_TCK")
        self.conn = psycopg.connect(url, autocommit=True)
        try:
            self.postmaster = int(self._stat(self.conn.info.backend_pid)[1])
        except (OSError, ValueError, IndexError):
            self.postmaster = 0

    @staticmethod
    def _stat(pid: int | str) -> list[str]:
        from pathlib import Path

        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()

    def now(self) -> float:
        import os

        total = 0
        if self.postmaster:
            try:
                f = self._stat(self.postmaster)
                total += int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])  # own + reaped children
            except (OSError, ValueError, IndexError):
                pass
            for pid in os.listdir("/proc"):
                if not pid.isdigit():
                    continue
                try:
                    f = self._stat(pid)
                    if int(f[1]) == self.postmaster:
                        total += int(f[11]) + int(f[12])  # utime + stime
                except (OSError, ValueError, IndexError):
                    pass
        return time.process_time() + total / self.tick

    def close(self) -> None:
        self.conn.close()


class _EventsourcingPeer:
    """The same events through pyeventsourcing's PostgreSQL application recorder, same database."""

    def __init__(self, url: str) -> None:
        from urllib.parse import parse_qs, urlsplit

        from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore

        parts = urlsplit(url)
        host = parse_qs(parts.query).get("host", [parts.hostname or "127.0.0.1"])[0]
        self.datastore = PostgresDatastore(
            dbname=parts.path.lstrip("/"),
            host=host,
            port=parts.port or 5432,
            user=parts.username or "postgres",
            password=parts.password or "",
            pool_size=2,
        )
        self.recorder = PostgresApplicationRecorder(self.datastore, events_table_name="es_stored_events")
        self.recorder.create_table()

    def append(self, batch: list[NewEvent]) -> float:
        """Append one batch; return the seconds it took (the encoding is timed, as ours is)."""
        from eventsourcing.persistence import StoredEvent as ESStoredEvent

        t0 = time.perf_counter()
        self.recorder.insert_events(
            [
                ESStoredEvent(
                    originator_id=uuid.uuid5(uuid.NAMESPACE_URL, ev.stream),
                    originator_version=1,
                    topic=ev.type,
                    state=orjson.dumps(dict(ev.data)),
                )
                for ev in batch
            ]
        )
        return time.perf_counter() - t0

    def read_rate(self) -> float:
        t0 = time.perf_counter()
        start, n = 1, 0
        while True:
            page = self.recorder.select_notifications(start=start, limit=10_000)
            if not page:
                break
            for note in page:
                orjson.loads(note.state)
                n += 1
            start = page[-1].id + 1
        return n / (time.perf_counter() - t0)

    def close(self) -> None:
        self.datastore.close()


def main() -> None:
    metrics = run()
    print_table("append / replay (bench/results/append.json)", metrics)
    write("append", metrics)


if __name__ == "__main__":
    from api.process import tune_gc

    tune_gc()
    main()
