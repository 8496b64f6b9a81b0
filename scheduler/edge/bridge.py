"""The bridge between the ledger and the pure scheduling core.

It is one of the two scheduler modules allowed to touch the ledger (with ``worker.py``):

* inputs: it folds input events (nodes, pods, groups, PDBs, quotas, config) from the log into
  the core's ``Scheduler`` in position order, converting normalized manifests into
  ``scheduler.model`` objects (``scheduler.edge.translate``). The position at which an object was
  first observed becomes its ``seq`` (the tie-breaker of equal priority and timestamp);
* decisions: each ``CycleResult`` becomes events (``scheduler.edge.decision_events``: one table from
  decision type to event type and stream, and the payloads), appended (with the inline projection) in
  one transaction per flush; every event's meta carries the cycle number, the snapshot
  position, the config hash and the scheduler version;
* bootstrap: a fresh bridge rebuilds the core's state by folding the log from position 0,
  including decision events written earlier (binds, preemptions), so a restarted worker
  continues where the last one stopped;
* controllers: preempted pods with a controller are re-created (``scheduler.edge.controllers`` builds
  the events, the bridge appends them).

``config_from``, ``node_from``, ``pod_from``, ``pod_requests``, ``ts`` and ``from_ts`` are
re-exported from ``scheduler.edge.translate``, and ``DECISION_EVENTS``, ``DECISION_TYPES``,
``decision_event`` and ``decision_payload`` from ``scheduler.edge.decision_events``, for the callers
that import them from here.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import orjson

from ledger import store, streams
from ledger.database import Database
from ledger.events import INPUT_ROUTES
from ledger.store import NewEvent, StoredEvent
from ledger.uow import UnitOfWork
from scheduler import decisions as d
from scheduler import model as m
from scheduler.edge import controllers
from scheduler.edge.decision_events import (
    CYCLE_COMPLETED,
    DECISION_EVENTS,
    DECISION_TYPES,
    POD_RETRIED,
    RETRIED,
    decision_event,
    decision_payload,
    stream,
)
from scheduler.edge.translate import (
    PodShapes,
    composite_from,
    config_from,
    config_hash,
    from_ts,
    group_from,
    node_from,
    pdb_from,
    pod_from,
    pod_requests,
    quota_from,
    ts,
)
from scheduler.fingerprints import diagnosis_fingerprint, verdict_fingerprint
from scheduler.scheduler import Scheduler

__all__ = [
    "DECISION_EVENTS",
    "DECISION_TYPES",
    "Bridge",
    "config_from",
    "decision_event",
    "decision_payload",
    "from_ts",
    "node_from",
    "pod_from",
    "pod_requests",
    "ts",
]

# The scheduler whose decisions a run records (``meta.scheduler_version``). Bumped when the
# same inputs can lead to other decisions; ``replay --verify`` compares a run recorded by an
# earlier version (``EARLIER_VERSIONS``) and reports it apart when it differs.
# 0.2: upstream's default profile (NodeResourcesBalancedAllocation weight 1), a failing gang
# member's own FitError, upstream's message strings, TAS placements-to-score (issue 30).
SCHEDULER_VERSION = "podledger-scheduler/0.2"
EARLIER_VERSIONS = frozenset({"podledger-scheduler/0.1"})
CYCLES_STREAM = streams.CYCLES
TAIL_PAGE = 1000  # catch_up: events read in one statement before switching to COPY
EVENT_NS = uuid.UUID("0b8a53e2-43a5-4f0c-9d7e-2a4c1b7f5e61")


def _event_id(key: str, data: Mapping[str, Any]) -> uuid.UUID:
    """The content-addressed id of a decision event: ``key`` (its cycle, index, type and stream)
    and the sha256 of its payload's sorted-key JSON, as a name-based UUID of ``EVENT_NS``."""
    digest = hashlib.sha256(orjson.dumps(data, option=orjson.OPT_SORT_KEYS)).hexdigest()
    return uuid.uuid5(EVENT_NS, f"{key}:{digest}")


# Decisions whose event names one pod: a recorded one makes the pod's last verdict stale
_POD_FIELD = {"PodBound": "pod", "PodNominated": "pod", "PodGated": "pod", "PodPreempted": "victim"}
_VERDICT_TYPES = frozenset({"PodUnschedulable", "PodGroupUnschedulable", *_POD_FIELD})  # see _note_verdict


@dataclass
class Bridge:
    """Feeds a ``Scheduler`` from the log and appends its decisions."""

    db: Database
    config: m.SchedulerConfig = field(default_factory=m.SchedulerConfig)
    actor: str = "scheduler"
    position: int = 0
    cycle: int = 0
    scheduler: Scheduler = field(init=False)
    _own: set[int] = field(default_factory=set)
    _pending: list[NewEvent] = field(default_factory=list)
    _created: dict[str, tuple[int, float]] = field(default_factory=dict)  # stream -> (seq, created_at)
    _requests: dict[str, dict[str, int]] = field(default_factory=dict)  # pod key -> effective requests
    on_cycle: Callable[[d.CycleResult], None] | None = None
    follow_config: bool = True  # False: keep `config` whatever SchedulerConfig the log holds (what-if)
    # False: record every retry in full, as before issue 14 (the baseline of bench.retries)
    compact_retries: bool = True
    nodes: dict[str, m.Node] = field(default_factory=dict)
    _started: bool = False
    # group -> (fingerprint, position) of its last full PodGroupUnschedulable diagnosis; the
    # position is None while the diagnosis waits in `_pending` (nothing to point at yet)
    _last_diag: dict[str, tuple[str, int | None]] = field(default_factory=dict)
    # pod -> (fingerprint, position) of its last PodUnschedulable, dropped by any other event
    # that changes the pod (so an unchanged retry can be recorded as one PodRetried)
    _last_pod: dict[str, tuple[str, int | None]] = field(default_factory=dict)
    # pod key -> manifest of pods with a controller ownerReference (re-created when preempted)
    _owned: dict[str, dict[str, Any]] = field(default_factory=dict)
    _preempted_at: dict[str, int] = field(default_factory=dict)  # victim -> PodPreempted position (last run)
    # group commit (``joined``): the caller's unit of work, and whether ``position`` is the log's
    # head under the ledger lock its transaction holds (nobody else can append before it ends)
    _uow: UnitOfWork | None = None
    _at_head: bool = False

    def __post_init__(self) -> None:
        self.scheduler = Scheduler(self.config)
        self._shapes = PodShapes()
        self._when: tuple[float | None, datetime | None] = (None, None)  # record: last time converted
        self._folded_at: tuple[datetime | None, float] = (None, 0.0)  # fold: last time converted
        self._config_hash = config_hash(self.config)

    # -- inputs -----------------------------------------------------------------------------
    def catch_up(self, upto: int | None = None) -> int:
        """Fold every event after ``self.position`` (up to ``upto``); returns how many."""
        n = 0
        if self._uow is not None and upto is None:
            if self._at_head:
                return 0  # our transaction appended last and holds the ledger lock
            while True:  # read inside the caller's transaction (it may hold uncommitted events)
                page = store.read_all(self._uow.conn, after=self.position, limit=TAIL_PAGE)
                for ev in page:
                    self.fold(ev)
                    n += 1
                if len(page) < TAIL_PAGE:
                    return n
        if upto is None:
            # The usual tail is a few events: one read on a pooled autocommit connection (no
            # BEGIN and ROLLBACK round trips). A full page means a long tail (a bootstrap): the
            # rest streams through iter_all's binary COPY.
            with self.db.connect() as conn:
                page = store.read_tail(conn, self.position, TAIL_PAGE)
            for ev in page:
                self.fold(ev)
                n += 1
            if len(page) < TAIL_PAGE:
                return n
        for ev in store.iter_all(self.db, after=self.position, upto=upto, light=True):
            self.fold(ev)
            n += 1
        return n

    @contextmanager
    def joined(self, uow: UnitOfWork) -> Iterator[Bridge]:
        """Group commit: runs inside the block read and append through ``uow`` (the caller's
        unit of work, usually a grouped one) instead of units of their own. The caller commits
        after the block; if the transaction fails, this bridge's in-memory state is ahead of the
        log and must be dropped (as the worker does)."""
        self._uow, self._at_head = uow, False
        try:
            yield self
        finally:
            self._uow, self._at_head = None, False

    def fold_stored(self, stored: Sequence[StoredEvent]) -> None:
        """Fold events the caller just appended in the joined transaction without reading them
        back, when they directly follow ``position`` (else: a catch-up)."""
        if not stored:
            return
        first, last = stored[0].position, stored[-1].position
        if self._uow is not None and first == self.position + 1 and last - first == len(stored) - 1:
            for ev in stored:
                self.fold(ev)
            self._at_head = True  # the append took the ledger lock of the joined transaction
        else:
            self._at_head = False
            self.catch_up()

    def fold(self, ev: StoredEvent) -> None:
        self.position = ev.position
        if ev.position in self._own:
            self._own.discard(ev.position)
            return
        at = ev.effective_at
        when = self._folded_at
        if at is not when[0]:  # lean rows of one time share their datetime: convert it once
            when = self._folded_at = (at, ts(at))
        now = when[1]
        typ = ev.type
        route = INPUT_ROUTES.get(typ)
        if route is not None:
            self._fold_input(route[0], route[1], ev, now)
            return
        data = ev.data
        sch = self.scheduler
        self._note_verdict(typ, data, ev.position)
        if typ == "PodBound":
            pod = sch.pod(data["pod"])
            if pod is not None and pod.node_name != data["node"]:
                gpu = pod.gpu
                if gpu is not None and data.get("gpus"):
                    gpu = replace(gpu, index=tuple(data["gpus"]))
                bound = m.copy_pod(pod, node_name=data["node"], nominated_node=None, start_time=now, gpu=gpu)
                sch.upsert_pod(bound, now)
        elif typ == "PodNominated":
            pod = sch.pod(data["pod"])
            if pod is not None:
                sch.upsert_pod(m.copy_pod(pod, nominated_node=data["node"]), now)
        elif typ == "PodPreempted":
            sch.remove_pod(data["victim"], now)
        elif typ in ("PodGroupConditionChanged", "CompositePodGroupConditionChanged"):
            # Seed the core with conditions written earlier, so that a restarted scheduler never
            # regresses a True PodGroupInitiallyScheduled.
            kind = "PodGroup" if typ.startswith("PodGroup") else "CompositePodGroup"
            sch.seed_condition(
                kind, data["group"], data["type"], data["status"], data["reason"], data["message"]
            )
        elif typ == "PodGroupSatisfiedChanged":
            sch.seed_condition(
                "PodGroup",
                data["group"],
                "PodGroupSatisfied",
                data["status"],
                data["reason"],
                data["message"],
            )

    def _fold_input(self, kind: str, action: str, ev: StoredEvent, now: float) -> None:
        sch = self.scheduler
        if action == "Deleted":
            data = ev.data
            ns, name = data.get("namespace") or "", data["name"]
            key = f"{ns}/{name}" if ns else name
            self._created.pop(ev.stream, None)
            if kind == "Node":
                self.nodes.pop(name, None)
                sch.remove_node(name)
            elif kind == "Pod":
                self._owned.pop(key, None)
                self._last_pod.pop(key, None)
                self._requests.pop(key, None)  # kept, it would grow with every pod ever created
                sch.remove_pod(key, now)
            elif kind == "PodGroup":
                sch.remove_pod_group(key, now)
            elif kind == "CompositePodGroup":
                sch.remove_composite(key, now)
            elif kind == "PodDisruptionBudget":
                sch.remove_pdb(key)
            elif kind in ("ElasticQuota", "ElasticQuotaTree"):
                sch.remove_quota(f"{kind}:{key}")
            elif kind == "SchedulerConfig" and self.follow_config:
                self._set_config(None)
            return
        obj = ev.data["object"]
        if action == "Created" and kind == "Pod":
            # a new object under a name whose previous pod is gone without a PodDeleted (a
            # preemption victim re-created by its controller): first observed here
            first = self._created[ev.stream] = (ev.position, now)
        else:
            first = self._created.setdefault(ev.stream, (ev.position, now))
        seq, created = first
        if kind == "Node":
            node = node_from(obj, seq)
            self.nodes[node.name] = node
            sch.upsert_node(node)
        elif kind == "Pod":
            pkey = f"{obj['metadata'].get('namespace') or 'default'}/{obj['metadata']['name']}"
            self._last_pod.pop(pkey, None)
            pod, requests = self._shapes.pod(obj, seq, created, self._status_of(pkey))
            self._requests[pkey] = requests
            if pod.has_controller:  # translated as controllers.has_controller reads it
                self._owned[pkey] = obj
            else:
                self._owned.pop(pkey, None)
            sch.upsert_pod(pod, now)
        elif kind == "PodGroup":
            sch.upsert_pod_group(group_from(obj, seq, created), now)
        elif kind == "CompositePodGroup":
            sch.upsert_composite(composite_from(obj, seq, created), now)
        elif kind == "PodDisruptionBudget":
            sch.upsert_pdb(pdb_from(obj))
        elif kind in ("ElasticQuota", "ElasticQuotaTree"):
            sch.upsert_quota(*quota_from(kind, obj))
        elif kind == "SchedulerConfig" and self.follow_config:
            self._set_config(obj)

    def _status_of(self, key: str) -> dict[str, Any] | None:
        """The status a re-folded manifest keeps: the node and nomination the pod has now."""
        current = self.scheduler.pod(key)
        if current is None:
            return None
        return {"nodeName": current.node_name, "nominatedNodeName": current.nominated_node}

    def _set_config(self, obj: Mapping[str, Any] | None) -> None:
        self.config = config_from(obj)
        self._config_hash = config_hash(self.config)
        self.scheduler.set_config(self.config)

    # -- running ----------------------------------------------------------------------------
    def record(self, result: d.CycleResult) -> None:
        """Queue the events of one cycle (flushed by ``flush``): ``cycle_events`` with the meta,
        time and content-addressed id each event is appended with."""
        events = self.cycle_events(result)
        meta = {
            "actor": self.actor,
            "cycle": result.cycle,
            "snapshot_position": self.position,
            "config_hash": self._config_hash,
            "scheduler_version": SCHEDULER_VERSION,
        }
        when = self._when[1] if self._when[0] == result.now else None
        if when is None:  # the cycles of one run share their time: convert it once
            when = from_ts(result.now)
            self._when = (result.now, when)
        # Content-addressed event ids: a restarted worker that redoes a cycle from the same
        # snapshot produces the same ids, and the store's idempotency turns the redo into a no-op.
        # An event's index in the cycle goes into its id (-1 for the cycle summary).
        cycle_key = f"{self.position}:{result.cycle}:{result.now}"
        for j, (stream_name, typ, data) in enumerate(events):
            key = f"{cycle_key}:{-1 if typ == CYCLE_COMPLETED else j}:{typ}:{stream_name}"
            self._pending.append(NewEvent(stream_name, typ, data, meta, _event_id(key, data), when))
        if self.on_cycle is not None:
            self.on_cycle(result)

    def cycle_events(self, result: d.CycleResult) -> list[tuple[str, str, dict[str, Any]]]:
        """(stream, event type, payload) of each event that records one cycle, in order: one per
        decision then the SchedulingCycleCompleted, or the one retry event of a cycle that changed
        nothing; exactly one is a cycle event (replay's ``is_cycle``). Tracks their verdicts (no
        position yet). ``record`` queues them; ``replay --verify`` compares them with the log."""
        self.cycle += 1
        if self.compact_retries and result.result == "unschedulable":
            retry = self._unchanged_retry(result)
            if retry is not None:
                # A retry that changed nothing: one small event stands for the whole cycle
                # (verdict, requeue and cycle summary); its diagnosis is the one it points to.
                return [retry]
        events = []
        for dec in result.decisions:
            stream, typ, data = decision_event(dec)
            if typ == "PodGroupUnschedulable":
                fp = diagnosis_fingerprint(data)
                prev = self._last_diag.get(data["group"])
                if prev is not None and prev[0] == fp and prev[1] is not None:
                    # Same inputs, same verdict: record only a pointer to the earlier diagnosis.
                    typ = RETRIED
                    data = {"group": data["group"], "diagnosis_position": prev[1], "fingerprint": fp}
            if typ == "PodBound":
                data["requests"] = self._requests.get(data["pod"])
            elif typ == "PodPreempted":
                data["requests"] = self._requests.get(data["victim"])
            self._note_verdict(typ, data, None)
            events.append((stream, typ, data))
        summary = {
            "cycle": result.cycle,
            "entity": result.entity,
            "result": result.result,
            "durations_ms": {},
        }
        events.append((CYCLES_STREAM, CYCLE_COMPLETED, summary))
        return events

    def _write(self, batch: Sequence[NewEvent]) -> list[StoredEvent]:
        """``batch`` appended (and projected) in the joined unit of work, or in one of its own."""
        if self._uow is not None:
            return self._uow.append(batch)
        with self.db.unit_of_work() as uow:
            stored = uow.append(batch)
            uow.commit()
        return stored

    def take_pending(self) -> list[NewEvent]:
        """The decision events recorded since the last flush, removed without being written."""
        batch, self._pending = self._pending, []
        return batch

    def flush(self) -> list[StoredEvent]:
        if not self._pending:
            return []
        batch, self._pending = self._pending, []
        stored = self._write(batch)
        self._own.update(e.position for e in stored)
        self.note_stored(stored)
        return stored

    def note_stored(self, events: Sequence[StoredEvent]) -> None:
        """Remember where full diagnoses were stored (for PodGroupRetried / PodRetried pointers)."""
        for e in events:
            if e.type in _VERDICT_TYPES:
                self._note_verdict(e.type, e.data, e.position)

    def _note_verdict(self, typ: str, data: Mapping[str, Any], position: int | None) -> None:
        """Track each group's and pod's last verdict: (fingerprint, position) of its last full
        PodGroupUnschedulable / PodUnschedulable (position None while it is not yet stored);
        any other decision about a pod (bound, nominated, gated, preempted) forgets its verdict."""
        if typ == "PodUnschedulable":
            self._last_pod[data["pod"]] = (verdict_fingerprint(data), position)
        elif typ == "PodGroupUnschedulable":
            self._last_diag[data["group"]] = (diagnosis_fingerprint(data), position)
        elif typ in _POD_FIELD:
            self._last_pod.pop(data[_POD_FIELD[typ]], None)

    def _unchanged_retry(self, result: d.CycleResult) -> tuple[str, str, dict[str, Any]] | None:
        """(stream, type, payload) of the one event that records ``result`` when the attempt
        changed nothing: an unschedulable verdict identical to the entity's (and each member
        pod's) last stored one, followed only by the requeue. ``PodRetried`` for a plain pod,
        ``PodGroupRetried`` (with ``attempts``) for a group; None when anything changed."""
        decs = result.decisions
        if result.result != "unschedulable" or len(decs) < 2 or not isinstance(decs[-1], d.EntityRequeued):
            return None
        req, head = decs[-1], decs[0]
        members = decs[1:-1]
        if isinstance(head, d.GroupUnschedulable):
            full = decision_event(head)[2]
            prev = self._last_diag.get(head.group)
            if prev is None or prev[1] is None or prev[0] != diagnosis_fingerprint(full):
                return None
            owner, key, kind = "group", head.group, "podgroup"
        elif isinstance(head, d.PodUnschedulable) and not members:
            members, owner, key, kind = (head,), "pod", head.pod, "pod"
            prev = None
        else:
            return None
        for dec in members:
            if not isinstance(dec, d.PodUnschedulable):
                return None
            last = self._last_pod.get(dec.pod)
            if last is None or last[1] is None or last[0] != verdict_fingerprint(decision_event(dec)[2]):
                return None
            if prev is None:
                prev = last
        assert prev is not None and prev[1] is not None
        data: dict[str, Any] = {owner: key, "diagnosis_position": prev[1], "attempts": req.attempts}
        if req.backoff_until is not None:
            data["backoff"] = round(req.backoff_until - result.now, 3)
        return stream(kind, key), (RETRIED if owner == "group" else POD_RETRIED), data

    def run_until_idle(self, now: float, max_cycles: int = 1_000_000) -> list[d.CycleResult]:
        """Catch up with the log, run cycles until idle at ``now``, append every decision.

        Preemption victims with a controller ownerReference are then re-created as new pending
        pods (``recreate_victims``, a separate transaction after the run's decisions, so that
        ``replay --verify`` folds them as inputs), and the scheduler runs again at ``now``.
        """
        out = self._run_once(now, max_cycles)
        results = out
        for _ in range(100):
            if not self.recreate_victims(results, now):
                break
            results = self._run_once(now, max_cycles)
            out = out + results
        return out

    def recreate_victims(self, results: Sequence[d.CycleResult], now: float) -> list[StoredEvent]:
        """Append a ``PodCreated`` for every controller-owned victim of ``results``
        (``scheduler.edge.controllers``), then fold them."""
        victims = (
            controllers.preempted_owned(results, self._owned) if self.config.controller_emulation else []
        )
        if not victims:
            return []
        batch = controllers.recreations(victims, self._owned, self._preempted_at, from_ts(now), EVENT_NS)
        stored = self._write(batch)
        if self._uow is not None:
            self.fold_stored(stored)
        else:
            self.catch_up()
        return stored

    def _run_once(self, now: float, max_cycles: int) -> list[d.CycleResult]:
        now = ts(from_ts(now))  # microsecond precision: what the log stores, so replays match
        self.catch_up()
        results = self.scheduler.run_until_idle(now, max_cycles=max_cycles)
        if results and not self._started:
            # Marks where this scheduler's in-memory state was built: replays rebuild it from
            # exactly the same prefix of the log.
            self._started = True
            self._pending.append(
                NewEvent(
                    streams.STARTS,
                    "SchedulerStarted",
                    {
                        "snapshot_position": self.position,
                        "actor": self.actor,
                        "config_hash": self._config_hash,
                    },
                    {"actor": self.actor},
                    None,
                    from_ts(now),
                )
            )
        for res in results:
            self.record(res)
        # One run, one transaction: nothing from another writer can land between its cycles,
        # so `replay --verify` can re-run it from exactly the same snapshot.
        stored = self.flush()
        self._preempted_at = {e.data["victim"]: e.position for e in stored if e.type == "PodPreempted"}
        first, last = (stored[0].position, stored[-1].position) if stored else (0, 0)
        if stored and first == self.position + 1 and last - first == len(stored) - 1:
            # Our batch took the positions right after the last one folded (position order is
            # commit order), so reading it back would fold nothing but our own events, which
            # `fold` skips: move past them without the round trip.
            self.position = last
            self._own.difference_update(e.position for e in stored)
            self._at_head = self._uow is not None
        elif stored:
            self.catch_up()
        # Nothing appended: the catch-up at the start of the next run folds whatever other
        # writers appended meanwhile, before any cycle runs.
        return results
