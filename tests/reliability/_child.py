"""Child processes of the reliability suite (``python -m tests.reliability._child MODE ...``).

writer URL ACKS STOP PREFIX
    Until the file STOP exists: create a pod (apply_objects with an idempotency key) and append a
    NoteRecorded event with an event id chosen before the first attempt. A connection error
    (server restart) is retried with the same key/id until it succeeds; only then is the pod name
    or the event id written to ACKS ("pod NAME" / "event UUID", flushed and fsynced): those are
    the acknowledged writes. Any other error ends the process with a traceback (exit 1).

applier URL INDEX ROUNDS OUT
    One of N concurrent writers: each round applies two pods of its own (distinct streams),
    updates one of four shared nodes (shared objects), and appends to a shared stream with an
    expected version; every acknowledged event id goes to OUT. Conflicts are retried.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

RETRY_FOR = 60.0  # seconds a write is retried across a server outage before giving up


def _pod(name: str, cpu: str = "100m") -> str:
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default}}\n"
        f"spec: {{containers: [{{name: c, resources: {{requests: {{cpu: {cpu}}}}}}}]}}\n"
    )


def _connection_error(exc: BaseException) -> bool:
    """A broken or unreachable server: psycopg's OperationalError (the pool's PoolTimeout, waiting
    for a connection while the server is down, is one too)."""
    import psycopg

    return isinstance(exc, psycopg.OperationalError)


def _retry(fn: Any, what: str, log: Any) -> Any:
    deadline = time.monotonic() + RETRY_FOR
    attempt = 0
    while True:
        attempt += 1
        try:
            return fn()
        except Exception as exc:
            if not _connection_error(exc) or time.monotonic() > deadline:
                raise
            log(f"retry {what} (attempt {attempt}): {type(exc).__name__}: {str(exc).splitlines()[0][:120]}")
            time.sleep(0.1)


def writer(url: str, acks: str, stop: str, prefix: str) -> int:
    from api.services.objects import load_documents
    from ledger import db
    from ledger.resources.parse import parse_documents
    from ledger.store import NewEvent
    from ledger.uow import write
    from tests.ledger_helpers import apply

    database = db.get_database(url, migrate_on_start=False)

    def log(msg: str) -> None:
        sys.stderr.write(msg + "\n")
        sys.stderr.flush()

    with open(acks, "a", buffering=1) as out:

        def ack(line: str) -> None:
            out.write(line + "\n")
            out.flush()
            os.fsync(out.fileno())

        i = 0
        while not Path(stop).exists():
            name = f"{prefix}-{i}"
            objs, errs = load_documents(parse_documents(_pod(name)))
            assert not errs, errs

            def apply_pod(objs: Any = objs, name: str = name) -> None:
                res = apply(database, objs, actor="writer", idempotency_key=name)
                assert not res.rejected, res.errors

            _retry(apply_pod, f"pod {name}", log)
            ack(f"pod {name}")
            eid = uuid.uuid4()
            note = NewEvent("load/notes", "NoteRecorded", {"text": name}, {"actor": "writer"}, eid)
            _retry(lambda note=note: write(database, [note]), f"note {eid}", log)
            ack(f"event {eid}")
            i += 1
            time.sleep(0.02)
    return 0


def applier(url: str, index: int, rounds: int, out_path: str) -> int:
    """Distinct objects (own pods), shared objects (4 nodes everyone updates) and a shared stream
    appended with expected versions; every acknowledged event id is written to ``out_path``."""
    from api.services.objects import load_documents
    from ledger import db, store
    from ledger.errors import ConcurrencyError
    from ledger.resources.parse import parse_documents
    from ledger.store import NewEvent
    from tests.ledger_helpers import apply

    database = db.get_database(url, migrate_on_start=False)
    acked: list[str] = []
    conflicts = 0

    def apply_text(text: str, key: str) -> None:
        nonlocal conflicts
        objs, errs = load_documents(parse_documents(text))
        assert not errs, errs
        for _ in range(200):
            try:
                res = apply(database, objs, actor=f"applier-{index}", idempotency_key=key)
            except ConcurrencyError:
                conflicts += 1
                continue
            assert not res.rejected, res.errors
            acked.extend(str(e.event_id) for e in res.events)
            return
        raise AssertionError(f"{key}: still conflicting after 200 attempts")

    for r in range(rounds):
        apply_text(_pod(f"a{index}-{r}") + "---\n" + _pod(f"a{index}-{r}-b", "200m"), f"a{index}-{r}-pods")
        node = (
            f"apiVersion: v1\nkind: Node\nmetadata: {{name: shared-{r % 4}, labels: {{last: a{index}-{r}}}}}\n"
            "status: {allocatable: {cpu: '8', memory: 16Gi, pods: 110}}\n"
        )
        apply_text(node, f"a{index}-{r}-node")
        for _ in range(200):  # a shared stream: read its version, append expecting it
            eid = uuid.uuid4()
            ev = NewEvent("load/shared", "NoteRecorded", {"text": f"a{index}-{r}"}, {}, eid)
            try:
                with database.connect() as conn:  # autocommit: the append is its own transaction
                    version = store.stream_version(conn, "load/shared")
                    store.append(conn, [ev], {"load/shared": version})
            except ConcurrencyError:
                conflicts += 1
                continue
            acked.append(str(eid))
            break
        else:
            raise AssertionError("load/shared: still conflicting after 200 attempts")
    Path(out_path).write_text("\n".join([f"conflicts {conflicts}", *acked]) + "\n")
    return 0


def main(argv: list[str]) -> int:
    mode, *args = argv
    if mode == "writer":
        return writer(*args)
    if mode == "applier":
        return applier(args[0], int(args[1]), int(args[2]), args[3])
    raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
