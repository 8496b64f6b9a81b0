"""Replay: re-run every recorded scheduling run from the log and compare (``replay --verify``).

``recorded_runs`` and ``produced_decisions`` are the replay engine the what-if service shares.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from ledger import events as registry
from ledger import store
from ledger.replay_rows import iter_rows
from ledger.store import StoredEvent
from scheduler.edge.bridge import DECISION_TYPES, EARLIER_VERSIONS, SCHEDULER_VERSION, Bridge, config_from, ts
from scheduler.edge.decision_events import CYCLE_COMPLETED, POD_RETRIED, RETRIED

if TYPE_CHECKING:
    from ledger.database import Database


@dataclass
class VerifyReport:
    """What ``verify_replay`` checked and every run whose replayed decisions differ."""

    runs: int = 0
    cycles: int = 0
    decisions: int = 0
    mismatches: list[dict[str, Any]] = field(default_factory=list)
    # runs recorded by an earlier scheduler version whose decisions this version makes otherwise:
    # version -> runs (not mismatches: the recorded version decided so; an unknown version is
    # a mismatch)
    other_versions: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.mismatches


OBSERVABLE = ("PodBound", "PodGroupConditionChanged", "CompositePodGroupConditionChanged")


def produced_decisions(bridge: Bridge, now: float) -> list[tuple[str, str, dict[str, Any]]]:
    """Run ``bridge``'s scheduler until idle at ``now`` and return the decision events it would
    append, as (stream, type, canonical data), without appending them."""
    return [(s, t, canonical(data)) for s, t, data in _produce(bridge, now)[0]]


def _produce(bridge: Bridge, now: float) -> tuple[list[tuple[str, str, Mapping[str, Any]]], int]:
    """``produced_decisions`` with each payload as the bridge built it (no JSON round trip), and
    the number of cycles run (each cycle has exactly one cycle event, ``is_cycle``)."""
    results = bridge.scheduler.run_until_idle(now)
    bridge.take_pending()
    produced: list[tuple[str, str, Mapping[str, Any]]] = []
    for res in results:
        produced += bridge.cycle_events(res)
    return produced, len(results)


def canonical(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` as it reads back from the log (JSON round trip), for byte-for-byte comparison."""
    return dict(orjson.loads(orjson.dumps(data)))


def recorded_runs(db: Database, events: Iterable[Any] | None = None) -> Iterator[tuple[str, Any]]:
    """Walk the log yielding ("input", event), ("start", event) and ("run", [decision events]);
    a run is the decisions of one scheduling run (same snapshot position and time).

    ``events``: the log to walk instead of ``store.iter_all(db)`` (``verify_replay`` passes
    lean rows, ledger/replay_rows.py, which decode ``meta`` and the times only when read)."""
    group: list[StoredEvent] = []
    gkey: tuple[Any, ...] | None = None
    for ev in store.iter_all(db) if events is None else events:
        typ = ev.type
        if typ in DECISION_TYPES:
            meta = ev.meta or {}
            # A PodBound or a group condition without cycle meta was decided outside podledger's
            # scheduler (a Binding or a status write through the Kubernetes API): an input to
            # fold, not a decision to recompute.
            if "cycle" in meta or typ not in OBSERVABLE:
                key = (meta.get("snapshot_position"), ev.effective_at)
                if group and key != gkey:
                    yield "run", group
                    group = []
                gkey = key
                group.append(ev)
                continue
        if group:
            yield "run", group
            group = []
        yield ("start" if typ == "SchedulerStarted" else "input"), ev
    if group:
        yield "run", group


CYCLE_TYPES = frozenset({CYCLE_COMPLETED, POD_RETRIED})


def is_cycle(ev: StoredEvent) -> bool:
    """One event per cycle: its SchedulingCycleCompleted, or the one retry event that stands for a
    cycle that changed nothing (PodRetried, PodGroupRetried with ``attempts``)."""
    return _is_cycle(ev.type, ev.data)


def _is_cycle(typ: str, data: Mapping[str, Any]) -> bool:
    return typ in CYCLE_TYPES or (typ == RETRIED and data.get("attempts") is not None)


def verify_replay(db: Database, progress: Any = None) -> VerifyReport:
    """Re-run every recorded scheduling run from its snapshot and compare decisions byte for byte.

    Returns a VerifyReport: how many runs, cycles and decision events were checked and, per
    run that differs, the first differing event (recorded vs replayed). An empty ``mismatches``
    is the proof that the log's decisions follow from its inputs.

    Inputs are folded lazily, up to each run's recorded ``snapshot_position``: another writer's
    events can commit while a run is being computed, so they precede the run's decisions in the
    log although the run did not see them. They are folded before the next run, as the live
    scheduler did at its next catch-up.
    """
    with db.transaction() as conn:
        # lean rows on one pooled connection, in one transaction
        with iter_rows(conn) as rows:
            return _verify(db, recorded_runs(db, rows), progress)


def _same_at_recorded_versions(
    produced: Sequence[tuple[str, str, Mapping[str, Any]]], rows: list[Any]
) -> bool:
    """Whether a run that differs differs only by the schema: every differing event is recorded
    at an older schema version and equals the replayed decision as that version's writer stored
    it (``ledger.events.downcast``), e.g. a PodGated v1 payload, which carries no condition
    wording."""
    if len(produced) != len(rows):
        return False
    for (s, t, data), row in zip(produced, rows, strict=True):
        if (s, t) != (row.stream, row.type):
            return False
        if data == row.data:
            continue
        raw = getattr(row, "raw_data", None)
        if raw is None or registry.downcast(t, row.schema_version, dict(data)) != raw:
            return False
    return True


def _verify(db: Database, runs: Iterable[tuple[str, Any]], progress: Any) -> VerifyReport:
    rep = VerifyReport()
    bridge: Bridge | None = None
    pending: deque[Any] = deque()
    whole = True  # `pending` holds every event walked so far (none folded or left out yet)
    for kind, item in runs:
        if kind == "input":
            pending.append(item)
            continue
        if kind == "start":
            snap = int(item.data["snapshot_position"])
            bridge = Bridge(db, config_from(None))
            if whole:  # the log up to the snapshot is pending already: fold it, no second read
                while pending and pending[0].position <= snap:
                    bridge.fold(pending.popleft())
            else:
                bridge.catch_up(upto=snap)
                pending = deque(e for e in pending if e.position > snap)
            whole = False
            continue
        whole = False
        # the recorded payloads come from the log's JSON already: no round trip to canonicalize
        recorded = [(e.stream, e.type, e.data) for e in item]
        if bridge is None:
            rep.mismatches.append(
                {"position": item[0].position, "problem": "decisions without a SchedulerStarted"}
            )
            continue
        snap = int((item[0].meta or {}).get("snapshot_position", item[0].position - 1))
        while pending and pending[0].position <= snap:  # the inputs the run saw
            bridge.fold(pending.popleft())
        bridge.position = snap
        produced, cycles = _produce(bridge, ts(item[0].effective_at))
        rep.runs += 1
        rep.decisions += len(recorded)
        # The payloads as built are compared first: equal ones are equal after the JSON round
        # trip too (the recorded side is decoded JSON, and the round trip keeps every JSON
        # value's type and value). Only a run that differs here (a tuple for a list, say, or a
        # real mismatch) is compared again in canonical form, as the log reads it back.
        if produced != recorded:
            produced = [(s, t, canonical(data)) for s, t, data in produced]
        version = (item[0].meta or {}).get("scheduler_version")
        if produced != recorded and version in EARLIER_VERSIONS:
            rep.other_versions[version] = rep.other_versions.get(version, 0) + 1
        elif produced != recorded and not _same_at_recorded_versions(produced, item):
            # the log's cycle events (where the run matches, one per cycle the replay ran)
            cycles = sum(1 for _, t, data in recorded if _is_cycle(t, data))
            first = next(
                (i for i, (a, b) in enumerate(zip(produced, recorded, strict=False)) if a != b),
                min(len(produced), len(recorded)),
            )
            rep.mismatches.append(
                {
                    "position": item[min(first, len(item) - 1)].position,
                    "recorded": recorded[first] if first < len(recorded) else None,
                    "replayed": produced[first] if first < len(produced) else None,
                    "recorded_count": len(recorded),
                    "replayed_count": len(produced),
                }
            )
        rep.cycles += cycles
        bridge.note_stored(item)
        if progress:
            progress(rep)
    return rep


__all__ = [
    "SCHEDULER_VERSION",
    "VerifyReport",
    "canonical",
    "produced_decisions",
    "recorded_runs",
    "verify_replay",
]
