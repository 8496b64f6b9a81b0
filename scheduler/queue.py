"""Scheduling queue of entities: plain pods (``ns/name``), standalone PodGroups (``pg/ns/name``)
and whole CompositePodGroup trees (``cpg/ns/<root>``).

Order (QueueSort = PrioritySort): priority desc (a group's priority is its root group's), then
queue timestamp asc, then ``seq`` (first observed) asc, then key.

It also holds the queue's bookkeeping: which pending pods form each entity (``members``,
``entity_of``), the entities whose PreEnqueue verdict is stale (``dirty``), and what was last
reported per pending pod (``pending_reason``, ``gated``).

States: ``active`` (in the heap), ``parked`` (backing off or waiting for a change), ``gated``
(PreEnqueue refused; re-evaluated when the entity or cluster changes) and ``inflight``.

Readiness rule of a parked entity at time ``now`` (``changed`` = the cluster or the entity changed
after its last attempt):

* ``now >= not_before`` (the backoff ``min(initial * 2^(N-1), max * sqrt(size))`` has passed), and
* ``now > attempt_time or changed``: an entity that failed at ``now`` is never retried at the same
  ``now`` unless something changed, so a backoff of 0 cannot spin (``run_until_idle`` terminates);
* plain pods that failed as Unschedulable additionally wait for a change (an event) or for the
  flush after ``unschedulable_flush_seconds`` (kube-scheduler's unschedulable pool). Groups retry on
  backoff alone (§4.4).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

ACTIVE = "active"
PARKED = "parked"
GATED = "gated"
INFLIGHT = "inflight"


def backoff_seconds(attempts: int, size: int, initial: float, maximum: float) -> float:
    """``min(initial * 2^(N-1), max * sqrt(entity size))`` for N >= 1 attempts. The exponent stops
    at 1023 (``2.0 ** 1024`` overflows; a pod retried that often, e.g. 1,000 rounds of a long
    log, has long reached the maximum, which the cap does not change)."""
    n = min(max(1, attempts), 1024)
    return float(min(initial * (2.0 ** (n - 1)), maximum * math.sqrt(max(1, size))))


@dataclass(slots=True)
class Entity:
    key: str
    kind: str  # pod | pg | cpg
    priority: int
    timestamp: float
    seq: int
    state: str = ACTIVE
    version: int = 0
    attempts: int = 0  # UnschedulableCount
    errors: int = 0  # ConsecutiveErrorsCount
    not_before: float = float("-inf")
    attempt_time: float = float("-inf")
    attempt_stamp: int = -1
    changed_stamp: int = 0
    needs_change: bool = False
    flush_at: float = float("inf")
    gate: tuple[str, str] | None = None  # (plugin, message) last gate reported

    def sort_key(self) -> tuple[int, float, int, str]:
        return (-self.priority, self.timestamp, self.seq, self.key)


class SchedulingQueue:
    def __init__(self) -> None:
        self.entities: dict[str, Entity] = {}
        self.stamp = 0
        self.cluster_stamp = 0
        # entries ``(*sort_key, version, key)``: flat, so a heap comparison walks one tuple
        # (the same order as ``(sort_key, version, key)``)
        self._active: list[tuple[int, float, int, str, int, str]] = []
        self._timers: list[tuple[float, int, str]] = []
        # the entries of _timers: an entry already queued is not pushed again (a parked entity
        # is re-examined on every cluster change; re-pushing its unchanged timer each time grew
        # the heap quadratically in a preemption burst)
        self._timer_set: set[tuple[float, int, str]] = set()
        self._after: list[tuple[float, int, str]] = []
        self._parked: set[str] = set()
        # parked entities whose backoff timer (not_before, version, key) is queued: until it
        # fires they cannot be ready, so a cluster change does not re-examine them; ``_scan``
        # holds the other parked entities (those a change may make ready)
        self._waiting: dict[str, tuple[float, int, str]] = {}
        self._scan: set[str] = set()
        self._changed_parked: set[str] = set()
        self._scanned_stamp = 0
        self.dirty: set[str] = set()  # entities whose PreEnqueue verdict must be re-evaluated
        self._dirty_heap: list[str] = []
        # membership: entity -> its pending pod keys, pending pod -> its entity
        self.members: dict[str, set[str]] = {}
        self.entity_of: dict[str, str] = {}
        # what was last reported per pending pod: (plugin, message)
        self.pending_reason: dict[str, tuple[str, str]] = {}
        self.gated: dict[str, tuple[str, str]] = {}  # pods whose entity PreEnqueue refused

    # ---------------------------------------------------------- membership
    def join(self, pod_key: str, key: str) -> None:
        self.entity_of[pod_key] = key
        self.members.setdefault(key, set()).add(pod_key)

    def leave(self, pod_key: str) -> tuple[str | None, bool]:
        """Remove a pending pod from its entity: (entity key or None, entity now empty)."""
        key = self.entity_of.pop(pod_key, None)
        if key is None:
            return None, False
        s = self.members.get(key)
        if s is not None:
            s.discard(pod_key)
            if not s:
                del self.members[key]
                return key, True
        return key, False

    def mark_dirty(self, key: str) -> None:
        if key not in self.dirty:
            heapq.heappush(self._dirty_heap, key)
        self.dirty.add(key)

    def pop_dirty(self) -> str | None:
        """The next dirty entity in key order (None when there is none)."""
        while self._dirty_heap:
            key = heapq.heappop(self._dirty_heap)
            if key in self.dirty:
                self.dirty.discard(key)
                return key
        return None

    # ------------------------------------------------------------- changes
    def cluster_changed(self) -> None:
        self.stamp += 1
        self.cluster_stamp = self.stamp

    def touch(self, key: str, kind: str, priority: int, seq: int, now: float) -> Entity:
        """The entity's membership or objects changed (creates it when new)."""
        self.stamp += 1
        e = self.entities.get(key)
        if e is None:
            e = Entity(key, kind, priority, now, seq, state=GATED)
            self.entities[key] = e
        else:
            if (e.priority, e.seq) != (priority, seq):
                e.priority, e.seq = priority, seq
                if e.state == ACTIVE:
                    self._push_active(e)
            if e.state == PARKED:
                self._changed_parked.add(key)
        e.changed_stamp = self.stamp
        return e

    def _unpark(self, key: str) -> None:
        self._parked.discard(key)
        self._waiting.pop(key, None)
        self._scan.discard(key)

    def drop(self, key: str) -> None:
        e = self.entities.pop(key, None)
        if e is not None:
            e.version += 1
        self._unpark(key)
        self._changed_parked.discard(key)
        self.dirty.discard(key)

    # ------------------------------------------------------------- helpers
    def _push_active(self, e: Entity) -> None:
        e.version += 1
        e.state = ACTIVE
        self._unpark(e.key)
        heapq.heappush(self._active, (*e.sort_key(), e.version, e.key))

    def _changed(self, e: Entity) -> bool:
        return max(self.cluster_stamp, e.changed_stamp) > e.attempt_stamp

    def ready(self, e: Entity, now: float) -> bool:
        if now < e.not_before:
            return False
        changed = self._changed(e)
        if not (now > e.attempt_time or changed):
            return False
        if e.needs_change and not changed and now < e.flush_at:
            return False
        return True

    def _park(self, e: Entity) -> None:
        e.version += 1
        e.state = PARKED
        self._parked.add(e.key)
        self._waiting.pop(e.key, None)
        self._scan.add(e.key)
        if not e.needs_change and e.not_before > e.attempt_time:
            self._wait(e)
        elif not e.needs_change:
            heapq.heappush(self._after, (e.attempt_time, e.version, e.key))
        if e.needs_change and e.flush_at != float("inf"):
            self._push_timer((e.flush_at, e.version, e.key))

    def _push_timer(self, entry: tuple[float, int, str]) -> None:
        if entry not in self._timer_set:
            self._timer_set.add(entry)
            heapq.heappush(self._timers, entry)

    def _wait(self, e: Entity) -> None:
        """Queue the backoff timer of parked ``e``; until it fires, changes skip ``e``."""
        entry = (e.not_before, e.version, e.key)
        self._push_timer(entry)
        self._waiting[e.key] = entry
        self._scan.discard(e.key)

    def _pop_timer(self) -> tuple[float, int, str]:
        entry = heapq.heappop(self._timers)
        self._timer_set.discard(entry)
        key = entry[2]
        if self._waiting.get(key) == entry:
            del self._waiting[key]
            self._scan.add(key)
        return entry

    def _valid(self, key: str, version: int) -> Entity | None:
        e = self.entities.get(key)
        if e is None or e.version != version or e.state != PARKED:
            return None
        return e

    def promote(self, now: float) -> None:
        """Move parked entities that became ready at ``now`` to the active heap."""
        t = self._timers
        if not self._parked:
            self._changed_parked.clear()
            self._scanned_stamp = self.cluster_stamp
            return
        while t and t[0][0] <= now:
            _, ver, key = self._pop_timer()
            e = self._valid(key, ver)
            if e is not None and self.ready(e, now):
                self._push_active(e)
        a = self._after
        while a and a[0][0] < now:
            _, ver, key = heapq.heappop(a)
            e = self._valid(key, ver)
            if e is not None and self.ready(e, now):
                self._push_active(e)
        # An entity waiting on its queued backoff timer is skipped: the timers up to ``now``
        # were popped above, so its not_before is still ahead and it cannot be ready yet.
        if self.cluster_stamp > self._scanned_stamp:
            candidates = sorted(self._scan)
            self._scanned_stamp = self.cluster_stamp
        elif self._changed_parked:
            candidates = sorted(self._changed_parked & self._scan)
        else:
            return
        self._changed_parked.clear()
        for key in candidates:
            e = self.entities[key]
            if not self._changed(e):
                continue
            if self.ready(e, now):
                self._push_active(e)
            elif e.not_before > now:
                self._wait(e)

    def activate(self, e: Entity, now: float) -> None:
        """PreEnqueue passed for a gated (or new) entity: active unless still backing off."""
        if e.state in (ACTIVE, INFLIGHT):
            return
        if e.state == PARKED:
            return  # already queued; readiness decides
        if now < e.not_before:
            e.needs_change = False
            self._park(e)
        else:
            self._push_active(e)

    def gate(self, e: Entity) -> None:
        e.version += 1
        e.state = GATED
        self._unpark(e.key)

    def pop(self, now: float) -> Entity | None:
        h = self._active
        while h:
            *_, ver, key = heapq.heappop(h)
            e = self.entities.get(key)
            if e is None or e.version != ver or e.state != ACTIVE:
                continue
            e.state = INFLIGHT
            e.version += 1
            return e
        return None

    # ------------------------------------------------------------ requeue
    def requeue_immediately(self, e: Entity) -> None:
        """Root Success with leftovers: active at once, keeping the timestamp."""
        e.needs_change = False
        self._push_active(e)

    def requeue_failure(
        self,
        e: Entity,
        now: float,
        size: int,
        initial: float,
        maximum: float,
        *,
        is_error: bool,
        needs_change: bool,
        flush_seconds: float,
    ) -> float:
        if is_error:
            e.errors += 1
            n = e.errors
        else:
            e.attempts += 1
            e.errors = 0
            n = e.attempts
        b = backoff_seconds(n, size, initial, maximum)
        e.timestamp = now
        e.attempt_time = now
        e.attempt_stamp = self.stamp
        e.not_before = now + b
        e.needs_change = needs_change
        e.flush_at = now + flush_seconds if needs_change else float("inf")
        self._park(e)
        return e.not_before

    # -------------------------------------------------------------- timers
    def next_timer(self, now: float) -> float | None:
        t = self._timers
        while t and self._valid(t[0][2], t[0][1]) is None:
            self._pop_timer()
        if not t:
            return None
        if t[0][0] > now:
            return t[0][0]
        later = [w for w, v, k in t if w > now and self._valid(k, v) is not None]
        return min(later) if later else None

    def size(self) -> int:
        return len(self.entities)
