"""Cost of anchored history (``python -m bench.anchor``), on a fresh database.

- checkpoint of a log of N events at once (extend the Merkle tree from nothing, sign): µs/event;
- incremental checkpoints, one per appended batch of 1,000 events: µs/event;
- ``verify --checkpoint`` (recompute every hash, build the tree, consistency proof): µs/event;
- one inclusion proof (``prove``) and its outside verification: ms.
"""

from __future__ import annotations

import time

from bench.append import drop_database, fresh_database, pod_payload
from ledger import anchor, db, store
from ledger import transparency as tl
from ledger.database import Database
from ledger.store import NewEvent

N = 20_000
BATCH = 1_000
ROUNDS = 5


def _append(database: Database, start: int, n: int) -> None:
    for b in range(start, start + n, BATCH):
        with database.connect() as conn:  # autocommit: each batch its own transaction
            store.append(
                conn, [NewEvent(f"pod/bench/p{i}", "PodCreated", pod_payload(i)) for i in range(b, b + BATCH)]
            )


def main() -> None:
    url = fresh_database()
    try:
        database = db.get_database(url, migrate_on_start=False)
        signer = tl.Signer.generate("bench")
        _append(database, 0, N)
        t0 = time.perf_counter()
        first = anchor.make_checkpoint(database, signer, "bench")
        full = time.perf_counter() - t0
        inc: list[float] = []
        for r in range(ROUNDS):
            _append(database, N + r * BATCH, BATCH)
            t0 = time.perf_counter()
            anchor.make_checkpoint(database, signer, "bench")
            inc.append(time.perf_counter() - t0)
        total = N + ROUNDS * BATCH
        t0 = time.perf_counter()
        verdict = anchor.verify_against_checkpoint(database, first.note, signer.verifier)
        verify_s = time.perf_counter() - t0
        assert verdict.ok, verdict
        with database.connect() as conn:
            pos = store.head(conn) // 2
        t0 = time.perf_counter()
        proof = anchor.prove(database, pos, signer.verifier)
        prove_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        tl.verify_event_proof(proof, signer.verifier.text())
        check_s = time.perf_counter() - t0
    finally:
        drop_database(url)
    print(f"checkpoint of {N} events at once:        {full / N * 1e6:8.1f} µs/event ({full:.2f} s)")
    print(f"incremental checkpoint per {BATCH} events: {sum(inc) / (ROUNDS * BATCH) * 1e6:8.1f} µs/event")
    print(
        f"verify --checkpoint over {total} events: {verify_s / total * 1e6:8.1f} µs/event ({verify_s:.2f} s)"
    )
    print(f"prove one event:                          {prove_s * 1e3:8.1f} ms ({len(proof['path'])} hashes)")
    print(f"verify the proof (outside, key only):     {check_s * 1e3:8.1f} ms")


if __name__ == "__main__":
    from api.process import tune_gc

    tune_gc()
    main()
