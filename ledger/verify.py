"""Walk the hash chain and report the first position where it breaks."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ledger.database import Database

from ledger.canonical import GENESIS, canonical, event_hash
from ledger.replay_rows import read_chain

PAGE = 20_000


@dataclass(frozen=True, slots=True)
class VerifyResult:
    ok: bool
    checked: int
    first_bad_position: int | None = None
    reason: str = ""
    start: int = 0  # first position checked (> 0 when old partitions were detached)


class HashVersions:
    """Which hash rule applies at a position (table ``event_hash_versions``, migration 0024):
    the segment with the greatest (first_position, id) at or before it; version 1 before the
    first segment (and on a database that never had the table)."""

    def __init__(self, segments: list[tuple[int, int]]) -> None:
        self.firsts = [f for f, _ in segments]
        self.versions = [v for _, v in segments]

    @classmethod
    def read(cls, raw: Any) -> HashVersions:
        if not raw.execute("SELECT to_regclass('event_hash_versions') IS NOT NULL").fetchone()[0]:
            return cls([])
        rows = raw.execute(
            "SELECT first_position, version FROM event_hash_versions ORDER BY first_position, id"
        )
        return cls([(int(f), int(v)) for f, v in rows.fetchall()])

    def at(self, position: int) -> int:
        i = bisect_right(self.firsts, position)
        return self.versions[i - 1] if i else 1

    def recorded(self, position: int, recorded_at: datetime) -> datetime | None:
        """The ``recorded_at`` argument of ``canonical.event_hash`` for the event at ``position``."""
        version = self.at(position)
        if version == 1:
            return None
        if version == 2:
            return recorded_at
        raise ValueError(f"position {position}: unknown event hash version {version}")


class _Walk:
    """The chain walked so far: the link the next event must carry and the events checked."""

    def __init__(self, prev: bytes, progress: Callable[[int], None] | None, rules: HashVersions) -> None:
        self.prev = prev
        self.checked = 0
        self.progress = progress
        self.rules = rules

    def table(self, raw: Any, table: str, after: int, first_link: str = "") -> VerifyResult | None:
        """Check the events of ``table`` after ``after`` in order; a VerifyResult on a break.
        ``first_link``: the message if the first event does not carry ``prev``."""
        import orjson

        first = True
        while True:
            # lean rows (ledger/replay_rows.py): only what the hash covers is decoded
            page = read_chain(raw, after, PAGE, table=table)
            for ev in page:
                if ev.prev_hash != self.prev:
                    reason = "prev_hash does not match the preceding event (missing or reordered event)"
                    return VerifyResult(
                        False, self.checked, ev.position, first_link if first and first_link else reason
                    )
                first = False
                expect = event_hash(
                    self.prev,
                    stream=ev.stream,
                    version=ev.version,
                    type=ev.type,
                    schema_version=ev.schema_version,
                    event_id=ev.event_id,
                    data_bytes=canonical(orjson.loads(ev.data_text)),
                    meta_bytes=canonical(orjson.loads(ev.meta_text)),
                    effective_at=ev.effective_at,
                    recorded_at=self.rules.recorded(ev.position, ev.recorded_at),
                )
                if expect != ev.hash:
                    return VerifyResult(
                        False,
                        self.checked,
                        ev.position,
                        "hash does not match the event's contents (modified event)",
                    )
                self.prev = expect
                self.checked += 1
                if self.progress and self.checked % 10000 == 0:
                    self.progress(self.checked)
            if len(page) < PAGE:
                return None
            after = page[-1].position


_FIRST_RETAINED = (
    "prev_hash of the first retained event is not the hash of the last detached event "
    "(recorded when its partition was detached)"
)


def verify_chain(
    db: Database, progress: Callable[[int], None] | None = None, *, archive: bool = False
) -> VerifyResult:
    """Recompute every hash from the stored columns, in position order.

    A changed row shows as a hash mismatch at that row; a deleted row shows as the next row's
    ``prev_hash`` not matching its predecessor's hash.

    After old partitions were detached (ledger/partitions.py) the walk starts at the first
    retained event, whose stored link must be the hash of the last detached event recorded at
    detach time (a prefix cut any other way still breaks the chain at its first event). With
    ``archive`` the archived partitions (schema event_archive) are walked first, from the
    genesis link, and each must end on the hash recorded when it was detached: the whole chain
    is checked (a dropped partition makes that impossible and fails).
    """
    start = 0
    with db.connect() as raw:
        with raw.transaction():
            walk = _Walk(GENESIS, progress, HashVersions.read(raw))
            # (a database downgraded below migration 0016 has neither table)
            partitioned = raw.execute("SELECT to_regclass('event_archive.detached') IS NOT NULL").fetchone()
            detached: list[Any] = []
            if partitioned and partitioned[0]:
                detached = raw.execute(
                    "SELECT name, lo, hi, last_hash, archived FROM event_archive.detached ORDER BY hi"
                ).fetchall()
            for name, lo, hi, last_hash, archived in detached if archive else []:
                if not archived:
                    return VerifyResult(
                        False,
                        walk.checked,
                        int(lo),
                        f"partition {name} was dropped at detach: its events are gone",
                    )
                bad = walk.table(raw, f'event_archive."{name}"', int(lo) - 1)
                if bad is not None:
                    return bad
                if last_hash is not None and bytes(last_hash) != walk.prev:
                    return VerifyResult(
                        False,
                        walk.checked,
                        int(hi) - 1,
                        f"archived partition {name} does not end on the hash recorded when it was detached",
                    )
            if detached:
                start = int(detached[-1][2])
                walk.prev = bytes(detached[-1][3]) if detached[-1][3] is not None else GENESIS
            bad = walk.table(raw, "events", start - 1 if start else 0, _FIRST_RETAINED if detached else "")
            if bad is not None:
                return bad
            checked = walk.checked
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
    return VerifyResult(True, checked, start=0 if archive else start)
