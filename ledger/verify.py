"""Walk the hash chain and report the first position where it breaks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy.engine import Engine

from ledger.canonical import GENESIS, canonical, event_hash
from ledger.replay_rows import read_chain
from ledger.store import _raw

PAGE = 20_000


@dataclass(frozen=True, slots=True)
class VerifyResult:
    ok: bool
    checked: int
    first_bad_position: int | None = None
    reason: str = ""
    start: int = 0  # first position checked (> 0 when old partitions were detached)


def verify_chain(engine: Engine, progress: Callable[[int], None] | None = None) -> VerifyResult:
    """Recompute every hash from the stored columns, in position order.

    A changed row shows as a hash mismatch at that row; a deleted row shows as the next row's
    ``prev_hash`` not matching its predecessor's hash.

    After old partitions were detached (ledger/partitions.py) the walk starts at the first
    retained event, whose stored link must be the hash of the last detached event recorded at
    detach time (a prefix cut any other way still breaks the chain at its first event).
    """
    import orjson

    prev = GENESIS
    checked = 0
    after = 0
    start = 0
    with engine.connect() as conn:
        raw = _raw(conn)
        with raw.transaction():
            # (a database downgraded below migration 0016 has neither table)
            partitioned = raw.execute("SELECT to_regclass('event_archive.detached') IS NOT NULL").fetchone()
            detached = None
            if partitioned and partitioned[0]:
                detached = raw.execute(
                    "SELECT hi, last_hash FROM event_archive.detached ORDER BY hi DESC LIMIT 1"
                ).fetchone()
            if detached is not None:
                start, after = int(detached[0]), int(detached[0]) - 1
                prev = bytes(detached[1]) if detached[1] is not None else GENESIS
            while True:
                # lean rows (ledger/replay_rows.py): only what the hash covers is decoded
                page = read_chain(raw, after, PAGE)
                for ev in page:
                    if ev.prev_hash != prev and checked == 0 and detached is not None:
                        return VerifyResult(
                            False,
                            checked,
                            ev.position,
                            "prev_hash of the first retained event is not the hash of the last detached "
                            "event (recorded when its partition was detached)",
                        )
                    if ev.prev_hash != prev:
                        return VerifyResult(
                            False,
                            checked,
                            ev.position,
                            "prev_hash does not match the preceding event (missing or reordered event)",
                        )
                    expect = event_hash(
                        prev,
                        stream=ev.stream,
                        version=ev.version,
                        type=ev.type,
                        schema_version=ev.schema_version,
                        event_id=ev.event_id,
                        data_bytes=canonical(orjson.loads(ev.data_text)),
                        meta_bytes=canonical(orjson.loads(ev.meta_text)),
                        effective_at=ev.effective_at,
                    )
                    if expect != ev.hash:
                        return VerifyResult(
                            False,
                            checked,
                            ev.position,
                            "hash does not match the event's contents (modified event)",
                        )
                    prev = expect
                    checked += 1
                    if progress and checked % 10000 == 0:
                        progress(checked)
                if len(page) < PAGE:
                    break
                after = page[-1].position
        # The chain cannot show events cut off its end; every stream's OCC row still counts
        # them. A stream whose last event is missing names the position after the last one
        # (unless that event was in a detached partition: its key in event_keys says where).
        cut = raw.execute(
            "SELECT s.stream, s.version, coalesce(e.v, 0), coalesce(e.p, 0) FROM streams s "
            "LEFT JOIN (SELECT stream, max(version) AS v, max(position) AS p FROM events GROUP BY stream) e "
            "USING (stream) WHERE s.version <> coalesce(e.v, 0)"
            + (
                " AND NOT EXISTS (SELECT 1 FROM event_keys k WHERE k.stream = s.stream "
                f"AND k.version = s.version AND k.position < {int(start)})"
                if start
                else ""
            )
            + " ORDER BY 4 LIMIT 1"
        ).fetchone()
        if cut is not None:
            stream, expected, found, last = cut
            return VerifyResult(
                False,
                checked,
                int(last) + 1,
                f"stream {stream} counts {expected} events but the log holds {found} (events missing)",
            )
    return VerifyResult(True, checked, start=start)
