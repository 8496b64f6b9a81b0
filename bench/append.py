"""Append and replay benchmark (``python -m bench.append``), all on one database, one run.

- batched append (1,000 events per append) events/s vs a raw COPY of the same rows into a
  trigger-less copy of the table, 1,000 rows per commit (goal: ratio >= 0.7);
- single-event append latency vs one bare INSERT + COMMIT (goal: ratio <= 2);
- ordered replay into memory (server-side cursor, ``data::text`` decoded with orjson) in
  events/s (goal >= 150,000/s) vs a raw ordered read of the same rows without decoding.
"""

from __future__ import annotations

import statistics
import time
import uuid

import orjson
import psycopg

from bench.common import Metric, print_table, ratio_metric, write
from ledger import db, store
from ledger.store import NewEvent

N_BATCHED = 50_000
BATCH = 1_000
N_SINGLE = 400


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


def run() -> list[Metric]:
    url = fresh_database()
    try:
        engine = db.get_engine(url, migrate_on_start=False)
        raw = psycopg.connect(url)
        raw.execute(
            "CREATE TABLE bench_raw (LIKE events INCLUDING DEFAULTS INCLUDING IDENTITY INCLUDING INDEXES)"
        )
        raw.execute(
            "CREATE TABLE bench_single (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, stream text, data jsonb)"
        )
        raw.commit()

        # warm-up
        store.append(engine, [NewEvent(f"warm/{i}", "PodCreated", pod_payload(i)) for i in range(BATCH)])

        # 1. batched append vs raw COPY of the same rows
        batches = [
            [
                NewEvent(f"pod/bench/p{b * BATCH + i}", "PodCreated", pod_payload(b * BATCH + i))
                for i in range(BATCH)
            ]
            for b in range(N_BATCHED // BATCH)
        ]
        t0 = time.perf_counter()
        for batch in batches:
            store.append(engine, batch)
        ours = N_BATCHED / (time.perf_counter() - t0)

        rows = []
        with raw.cursor() as cur:
            cur.execute(
                "SELECT stream, version, type, schema_version, event_id, data::text, meta::text, effective_at, prev_hash, hash "
                "FROM events WHERE position > %s ORDER BY position LIMIT %s",
                (BATCH, N_BATCHED),
            )
            rows = cur.fetchall()
        rows = [(r[0], r[1], r[2], r[3], uuid.uuid4(), r[5], r[6], r[7], r[8], r[9]) for r in rows]
        t0 = time.perf_counter()
        for b in range(0, len(rows), BATCH):
            with (
                raw.cursor() as cur,
                cur.copy(
                    "COPY bench_raw (stream, version, type, schema_version, event_id, data, meta, effective_at, prev_hash, hash) FROM STDIN"
                ) as copy,
            ):
                for r in rows[b : b + BATCH]:
                    copy.write_row(r)
            raw.commit()
        copy_rate = len(rows) / (time.perf_counter() - t0)

        # 2. single-event append latency vs bare INSERT + COMMIT
        single: list[float] = []
        bare: list[float] = []
        payload = orjson.dumps(pod_payload(0)).decode()
        singles = [NewEvent(f"single/{i}", "PodCreated", pod_payload(i)) for i in range(N_SINGLE)]
        for i in range(N_SINGLE):
            t0 = time.perf_counter()
            store.append(engine, [singles[i]])
            single.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            raw.execute(
                "INSERT INTO bench_single (stream, data) VALUES (%s, %s::jsonb)", (f"single/{i}", payload)
            )
            raw.commit()
            bare.append(time.perf_counter() - t0)
        single_ms = statistics.median(single) * 1000
        bare_ms = statistics.median(bare) * 1000

        # 3. ordered replay into memory vs a raw ordered read without decoding
        total = store.head(engine)
        t0 = time.perf_counter()
        state: dict[str, int] = {}
        n = 0
        for ev in store.iter_all(engine, batch=10_000, upcast=False):
            state[ev.stream] = ev.version
            n += 1
        replay_rate = n / (time.perf_counter() - t0)
        t0 = time.perf_counter()
        with raw.transaction(), raw.cursor(name="rawread") as cur:
            cur.itersize = 10_000
            cur.execute("SELECT position, stream, version, type, data::text FROM events ORDER BY position")
            m = sum(1 for _ in cur)
        raw_read_rate = m / (time.perf_counter() - t0)
        raw.close()
        assert n == total == m

        # 4. the `eventsourcing` library's PostgreSQL recorder on the same events, same database
        es_append, es_read = _eventsourcing_baseline(url, batches)
    finally:
        drop_database(url)

    return [
        ratio_metric(
            "batched append (1,000/append)", ours, "events/s", "raw COPY, 1,000 rows/commit", copy_rate, 0.7
        ),
        ratio_metric(
            "single-event append p50",
            single_ms,
            "ms",
            "bare INSERT + COMMIT p50",
            bare_ms,
            2.0,
            higher_is_better=False,
        ),
        Metric(
            "ordered replay into memory (orjson)",
            replay_rate,
            "events/s",
            "raw ordered read, no decode",
            raw_read_rate,
            replay_rate / raw_read_rate,
            "value >= 150,000/s",
            replay_rate >= 150_000,
        ),
        ratio_metric(
            "batched append vs eventsourcing",
            ours,
            "events/s",
            "eventsourcing PostgresApplicationRecorder",
            es_append,
            1.0,
        ),
        ratio_metric(
            "ordered replay vs eventsourcing",
            replay_rate,
            "events/s",
            "eventsourcing select_notifications + orjson",
            es_read,
            1.0,
        ),
    ]


def _eventsourcing_baseline(url: str, batches: list[list[NewEvent]]) -> tuple[float, float]:
    """Append and read the same events with pyeventsourcing's PostgreSQL application recorder."""
    from urllib.parse import parse_qs, urlsplit

    from eventsourcing.persistence import StoredEvent as ESStoredEvent
    from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore

    parts = urlsplit(url)
    host = parse_qs(parts.query).get("host", [parts.hostname or "127.0.0.1"])[0]
    datastore = PostgresDatastore(
        dbname=parts.path.lstrip("/"),
        host=host,
        port=parts.port or 5432,
        user=parts.username or "postgres",
        password=parts.password or "",
        pool_size=2,
    )
    recorder = PostgresApplicationRecorder(datastore, events_table_name="es_stored_events")
    recorder.create_table()
    es_batches = []
    for batch in batches:
        es_batches.append(
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
    t0 = time.perf_counter()
    for es_batch in es_batches:
        recorder.insert_events(es_batch)
    total = sum(len(b) for b in es_batches)
    append_rate = total / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    start, n = 1, 0
    while True:
        page = recorder.select_notifications(start=start, limit=10_000)
        if not page:
            break
        for note in page:
            orjson.loads(note.state)
            n += 1
        start = page[-1].id + 1
    read_rate = n / (time.perf_counter() - t0)
    datastore.close()
    return append_rate, read_rate


def main() -> None:
    metrics = run()
    print_table("append / replay (bench/results/append.json)", metrics)
    write("append", metrics)


if __name__ == "__main__":
    main()
