"""Walk the hash chain and report the first position where it breaks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy.engine import Engine

from ledger.canonical import GENESIS, canonical, event_hash
from ledger.store import _raw


@dataclass(frozen=True, slots=True)
class VerifyResult:
    ok: bool
    checked: int
    first_bad_position: int | None = None
    reason: str = ""


def verify_chain(engine: Engine, progress: Callable[[int], None] | None = None) -> VerifyResult:
    """Recompute every hash from the stored columns, in position order.

    A changed row shows as a hash mismatch at that row; a deleted row shows as the next row's
    ``prev_hash`` not matching its predecessor's hash.
    """
    import orjson

    prev = GENESIS
    checked = 0
    with engine.connect() as conn:
        raw = _raw(conn)
        with raw.transaction(), raw.cursor(name="podledger_verify") as cur:
            cur.itersize = 5000
            cur.execute(
                "SELECT position, stream, version, type, schema_version, event_id, data::text, meta::text, "
                "effective_at, prev_hash, hash FROM events ORDER BY position"
            )
            for pos, stream, version, typ, sv, eid, data, meta, eff, prev_hash, stored in cur:
                if bytes(prev_hash) != prev:
                    return VerifyResult(
                        False,
                        checked,
                        pos,
                        "prev_hash does not match the preceding event (missing or reordered event)",
                    )
                expect = event_hash(
                    prev,
                    stream=stream,
                    version=version,
                    type=typ,
                    schema_version=sv,
                    event_id=eid,
                    data_bytes=canonical(orjson.loads(data)),
                    meta_bytes=canonical(orjson.loads(meta)),
                    effective_at=eff,
                )
                if expect != bytes(stored):
                    return VerifyResult(
                        False, checked, pos, "hash does not match the event's contents (modified event)"
                    )
                prev = expect
                checked += 1
                if progress and checked % 10000 == 0:
                    progress(checked)
        # The chain cannot show events cut off its end; every stream's OCC row still counts
        # them. A stream whose last event is missing names the position after the last one.
        cut = raw.execute(
            "SELECT s.stream, s.version, coalesce(e.v, 0), coalesce(e.p, 0) FROM streams s "
            "LEFT JOIN (SELECT stream, max(version) AS v, max(position) AS p FROM events GROUP BY stream) e "
            "USING (stream) WHERE s.version <> coalesce(e.v, 0) ORDER BY 4 LIMIT 1"
        ).fetchone()
        if cut is not None:
            stream, expected, found, last = cut
            return VerifyResult(
                False, checked, int(last) + 1,
                f"stream {stream} counts {expected} events but the log holds {found} (events missing)",
            )
    return VerifyResult(True, checked)
