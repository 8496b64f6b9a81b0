"""The long-running ``attach`` process: elect, sync, watch, write.

- Leader election as the worker does it (``pg_try_advisory_lock`` on a dedicated autocommit
  session, its own lock id): one ``attach`` writes to a ledger at a time; a standby takes over
  when the leader's session dies.
- Start: per watched (kind, scope), in ``kinds.WATCHED`` order, resume the watch from the
  ledger's cursor (the highest resourceVersion recorded); without one, list, record the list
  and watch from its resourceVersion. A 410 Gone lists again: objects gone from the cluster are
  deleted, then every item is recorded (unchanged ones append nothing).
- One thread per (kind, scope) watches and puts changes on one bounded queue (a full queue
  stops the reads: TCP backpressure to the server); the main thread writes them one
  transaction each. Watch errors reconnect with exponential backoff from the last
  resourceVersion seen.
- A JSON progress line on stderr (and Prometheus metrics with ``--metrics-port``): changes by
  outcome, queue depth, the lag in resourceVersions and seconds.
- SIGTERM/SIGINT: finish the change being written, release the lock, exit 0. A kill at any
  moment loses nothing: the next leader resumes from the cursor, which only counts committed
  events, and a change is appended at most once (event ids derive from uid + resourceVersion).
"""

from __future__ import annotations

import json
import logging
import queue
import random
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg_pool import PoolTimeout

from api.attach import mirror as M
from api.attach import profile as P
from api.attach import remote as R
from api.attach.binder import Binder
from api.attach.conditions import ConditionWriter
from api.attach.kinds import EVENTS, WATCHED, Watched, key_of, resource_version, rv_number
from api.attach.metrics import Metrics
from api.attach.remote import Gone, Remote, RemoteError
from ledger.database import Database
from ledger.leader import LeaderLoop

ATTACH_LOCK = 7243150018
log = logging.getLogger("podledger.attach")
MAX_DEFER_ROUNDS = 3


def json_line(**fields: Any) -> None:
    sys.stderr.write(json.dumps({"ts": datetime.now(UTC).isoformat(), **fields}, default=str) + "\n")
    sys.stderr.flush()


class Interrupted(BaseException):
    """SIGTERM/SIGINT while the main thread waits on the cluster: the call is abandoned."""


Key = tuple[str, str, str]


@dataclass
class Item:
    w: Watched
    scope: str | None
    kind: str  # ADDED / MODIFIED / DELETED / BOOKMARK / PAGE / LISTED / OPENED / INVALID
    obj: dict[str, Any]
    received: float
    listed: list[dict[str, Any]] | None = None  # PAGE: the page's objects
    keys: set[Key] | None = None  # LISTED: every object of the complete list


@dataclass
class Stream:
    w: Watched
    scope: str | None
    seen_rv: str = ""  # the last resourceVersion read from the server (events and bookmarks)
    done_rv: str = ""  # the last resourceVersion written (or found unchanged)
    reconnects: int = 0
    relists: int = 0
    need_list: bool = False
    synced: bool = False  # listed (or its watch resumed) in this term
    # set once this stream's first list was recorded (or failed): the next stream lists after
    # it, so references are mirrored before the objects naming them
    ready: threading.Event = field(default_factory=threading.Event)

    @property
    def name(self) -> str:
        return f"{self.w.plural}" + (f"/{self.scope}" if self.scope else "")


@dataclass
class Attach:
    db: Database
    url: str  # libpq URL for the leader lock session
    remote: Remote
    cluster: str
    namespaces: list[str] = field(default_factory=list)
    mode: str = "mirror"
    name: str = "attach"
    queue_size: int = 1000
    progress_every: float = 10.0
    backoff_max: float = 30.0
    backoff_base: float = 0.2
    seed: int | None = None  # of the backoff jitter (tests); None: from the system
    # 401/403 answers in a row on one stream before attach gives up and exits non-zero (0: never)
    auth_failures: int = 10
    events_every: float = 5.0  # seconds between two reads of the cluster's Events (0: never)
    watch_timeout: int = 300
    standby_poll: float = 0.5
    profile: str = "podledger"  # schedule mode: the schedulerName of the pods podledger schedules
    metrics: Metrics = field(default_factory=Metrics)
    stop_event: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self._loop = LeaderLoop(
            self.url,
            ATTACH_LOCK,
            stop=self.stop_event,
            standby_poll=self.standby_poll,
            on_standby=lambda: json_line(event="standby", attach=self.name),
        )
        self.binder: Binder | None = None
        self.conditions: ConditionWriter | None = None
        if self.mode == "schedule":
            self.binder = Binder(self.db, self.remote, self.cluster, profile=self.profile)
            self.conditions = ConditionWriter(self.db, self.remote, self.cluster, profile=self.profile)
        self._last_bind = 0.0
        self.mirror = M.Mirror(
            self.db,
            self.cluster,
            self.remote.scheduled_by,
            shadow=self.mode == "shadow",
            verdicts=self.mode == "mirror",
        )
        self.q: queue.Queue[Item] = queue.Queue(maxsize=self.queue_size)
        self.streams: list[Stream] = []
        self.counts: dict[str, int] = {}
        self.deferred: list[tuple[Item, int]] = []
        self._last_progress = 0.0
        self._lag_seconds = 0.0  # how long the last change written had waited in the queue
        self._rng = random.Random(self.seed)
        self._synced_logged = False
        self._auth_streak = False  # some stream is being refused (logged once per streak)
        self.exit_code = 0

    # -- leadership (ledger/leader.py, as the worker) --------------------------------------------------

    # -- writing ----------------------------------------------------------------------------------
    def _count(self, w: Watched, outcomes: list[str]) -> None:
        for o in outcomes:
            self.counts[o] = self.counts.get(o, 0) + 1
            self.metrics.changes.labels(w.kind, o).inc()

    def _record(self, item: Item, *, defer: bool = True, listed: bool = False) -> M.Change:
        try:
            if not isinstance(item.obj.get("metadata"), dict):
                raise ValueError("the object has no metadata")
            change = self.mirror.apply(item.w, item.scope, item.kind, item.obj, defer=defer, listed=listed)
        except (psycopg.Error, PoolTimeout):
            raise  # the database: the term ends, the next one resumes from the ledger
        except Exception as exc:  # anything about the object itself: recorded as invalid, skipped
            change = self.mirror.invalid(item.w, item.scope, item.obj, f"{type(exc).__name__}: {exc}")
        self._count(item.w, change.outcomes)
        if M.INVALID in change.outcomes or M.REJECTED in change.outcomes:
            json_line(
                event=change.outcomes[-1],
                attach=self.name,
                kind=item.w.kind,
                object="/".join(key_of(item.w, item.obj)[1:]).strip("/"),
                detail=change.detail[:500],
            )
        return change

    def sync_page(self, st: Stream, items: list[dict[str, Any]], whole: bool = False) -> None:
        """Record one page of a list, oldest change first (``whole``: the list's only page)."""
        for obj in M.by_resource_version(items):
            item = Item(st.w, st.scope, "ADDED", obj, time.monotonic())
            change = self._record(item, listed=not whole)
            if M.DEFERRED in change.outcomes:
                self.deferred.append((item, 0))

    def sync_end(self, st: Stream, keys: set[Key], rv: str) -> None:
        """A list is complete: the objects the ledger holds that it no longer has are deleted."""
        for stale in self.mirror.stale(st.w, st.scope, keys):
            self._count(st.w, self.mirror.apply(st.w, st.scope, "DELETED", stale, listed=True).outcomes)
        st.done_rv = st.seen_rv = rv
        st.synced = True
        st.ready.set()
        self._retry_deferred(final=True)

    def _retry_deferred(self, final: bool = False) -> None:
        """Retry objects admission refused (a reference not mirrored yet); after
        MAX_DEFER_ROUNDS (or ``final``, when nothing else is queued) record the refusal."""
        pending, self.deferred = self.deferred, []
        for item, rounds in pending:
            last = final or rounds + 1 >= MAX_DEFER_ROUNDS
            change = self._record(item, defer=not last)
            if M.DEFERRED in change.outcomes:
                self.deferred.append((item, rounds + 1))

    def handle(self, item: Item) -> None:
        if item.kind == "EVENTS":
            self._count(item.w, self.mirror.record_events(item.listed or []))
            return
        st = self._stream(item.w, item.scope)
        if item.kind == "PAGE":
            self.sync_page(st, item.listed or [], bool(item.obj.get("whole")))
        elif item.kind == "LISTED":
            st.relists += 1
            self.metrics.relists.labels(item.w.kind).inc()
            self.sync_end(st, item.keys or set(), resource_version(item.obj))
        elif item.kind == "OPENED":
            st.synced = True
            st.ready.set()
        elif item.kind == "INVALID":
            o = item.obj
            change = self.mirror.invalid(
                item.w, item.scope, None, str(o.get("reason")), o.get("size"), str(o.get("digest") or "")
            )
            self._count(item.w, change.outcomes)
            json_line(event=M.INVALID, attach=self.name, kind=item.w.kind, detail=change.detail[:500])
        elif item.kind == "BOOKMARK":
            st.done_rv = _usable_rv(resource_version(item.obj)) or st.done_rv
        else:
            change = self._record(item)
            if M.DEFERRED in change.outcomes:
                self.deferred.append((item, 0))
            elif self.deferred and any(o in (M.CREATED, M.UPDATED) for o in change.outcomes):
                self._retry_deferred()
            st.done_rv = _usable_rv(change.rv) or st.done_rv
        self._lag_seconds = time.monotonic() - item.received
        self.metrics.lag_seconds.set(self._lag_seconds)
        if not self._synced_logged and all(s.synced for s in self.streams):
            self._synced_logged = True
            json_line(
                event="synced", attach=self.name, mode=self.mode, streams=len(self.streams), **self.counts
            )

    def _stream(self, w: Watched, scope: str | None) -> Stream:
        for st in self.streams:
            if st.w.kind == w.kind and st.scope == scope:
                return st
        raise KeyError((w.kind, scope))

    # -- watching -----------------------------------------------------------------------------
    def _put(self, item: Item) -> bool:
        while not self.stop_event.is_set():
            try:
                self.q.put(item, timeout=0.5)
                self.metrics.queue_depth.set(self.q.qsize())
                return True
            except queue.Full:
                continue
        return False

    def _refused(self, exc: Exception, st: Stream, tries: int) -> bool:
        """A 401/403: one clear line per streak, a metric, and after ``auth_failures`` refusals in
        a row on a stream, stop with a non-zero exit. True if ``exc`` was one."""
        if not (isinstance(exc, RemoteError) and exc.status in (401, 403)):
            return False
        self.metrics.auth_failures.labels(str(exc.status)).inc()
        if not self._auth_streak:
            self._auth_streak = True
            json_line(
                event="unauthorized",
                attach=self.name,
                status=exc.status,
                error=str(exc)[:300],
                hint="the cluster refused attach's credentials: an expired token (`kubectl create token` "
                "lasts 1 h by default; a projected service-account token is re-read when it rotates) "
                "or missing RBAC; retrying with backoff",
            )
        if self.auth_failures and tries + 1 >= self.auth_failures:
            json_line(
                event="giving-up",
                attach=self.name,
                stream=st.name,
                status=exc.status,
                failures=tries + 1,
                error=str(exc)[:300],
            )
            self.exit_code = 3
            self.stop_event.set()
        return True

    def _backoff(self, tries: int) -> float:
        """Exponential backoff with full jitter: uniform in [0, min(max, base * 2^tries)]."""
        return self._rng.uniform(0, min(self.backoff_max, self.backoff_base * (2 ** min(tries, 30))))

    def _list(self, st: Stream, stopped: Any) -> bool:
        """List ``st`` page by page onto the queue, then LISTED with the keys of every object;
        False when stopped. Memory: one page, and the keys."""
        keys: set[Key] = set()
        rv = ""
        for page in self.remote.list_pages(st.w, st.scope, stop=stopped):
            rv = page.resource_version
            self._auth_streak = False
            keys.update(key_of(st.w, o) for o in page.items if isinstance(o.get("metadata"), dict))
            # the only page of a list is recorded oldest change first: its resourceVersions may
            # be a resume point; a page of several is not (marked listed, see mirror._meta)
            marker = {"whole": page.whole}
            if not self._put(Item(st.w, st.scope, "PAGE", marker, time.monotonic(), listed=page.items)):
                return False
        if stopped():
            return False
        done = Item(
            st.w, st.scope, "LISTED", {"metadata": {"resourceVersion": rv}}, time.monotonic(), keys=keys
        )
        if not self._put(done):
            return False
        st.seen_rv = rv
        return True

    def _watch(self, st: Stream, term: threading.Event, after: threading.Event | None) -> None:
        def stopped() -> bool:
            return self.stop_event.is_set() or term.is_set()

        while after is not None and not after.wait(0.2):  # the stream before lists first
            if stopped():
                return
        failures = 0  # consecutive: lists and watches that failed or ended in 410
        while not stopped():
            try:
                if st.need_list:
                    if not self._list(st, stopped):
                        return
                    st.need_list = False
                for typ, obj in self.remote.watch(st.w, st.scope, st.seen_rv, self.watch_timeout):
                    if stopped():
                        return
                    if typ not in (R.OPENED, R.INVALID):
                        failures = 0
                    self._auth_streak = False
                    if not self._put(Item(st.w, st.scope, typ, obj, time.monotonic())):
                        return
                    if typ not in (R.OPENED, R.INVALID):
                        st.seen_rv = _usable_rv(resource_version(obj)) or st.seen_rv
                continue
            except Gone:
                st.need_list = True
                wait = self._backoff(failures)
                json_line(
                    event="gone",
                    attach=self.name,
                    stream=st.name,
                    resourceVersion=st.seen_rv,
                    backoff=round(wait, 3),
                )
            except Exception as exc:  # RemoteError, TooLarge, anything unexpected: a watch thread never dies
                missing = isinstance(exc, RemoteError) and exc.status == 404
                other = st.w.next_version() if missing else None
                if other is not None:  # the cluster serves this kind at another version
                    json_line(
                        event="version",
                        attach=self.name,
                        kind=st.w.kind,
                        tried=st.w.version,
                        next=other.version,
                    )
                    st.w = other  # resourceVersions are the same across versions: a watch goes on
                    continue
                if st.need_list and missing and not st.synced:
                    # the cluster does not serve this kind (a CRD not installed): skip it
                    json_line(event="unserved", attach=self.name, kind=st.w.kind, error=str(exc)[:200])
                    st.synced = True
                    st.ready.set()
                    return
                if st.need_list:
                    st.ready.set()  # a list that fails does not hold the streams after it
                if self._refused(exc, st, failures) and self.stop_event.is_set():
                    return
                st.reconnects += 1
                self.metrics.reconnects.labels(st.w.kind).inc()
                wait = self._backoff(failures)
                json_line(
                    event="relist" if st.need_list else "reconnect",
                    attach=self.name,
                    stream=st.name,
                    error=f"{type(exc).__name__}: {exc}"[:300],
                    backoff=round(wait, 3),
                )
            failures += 1
            if self.stop_event.wait(wait) or term.is_set():
                return

    def _poll_events(self, term: threading.Event) -> None:
        """Every ``events_every`` seconds, list the cluster's Events (events.k8s.io/v1; core/v1
        when that is not served) onto the queue: the writer records the scheduling ones once
        per (Event, count). Listing, not watching: what every API server serves."""

        def stopped() -> bool:
            return self.stop_event.is_set() or term.is_set()

        apis = list(EVENTS)
        failures = 0
        while not stopped():
            w = apis[0]
            try:
                for scope in self.scopes(w):
                    for page in self.remote.list_pages(w, scope, stop=stopped):
                        if not self._put(Item(w, scope, "EVENTS", {}, time.monotonic(), listed=page.items)):
                            return
                failures = 0
                wait = self.events_every
            except Exception as exc:
                if isinstance(exc, RemoteError) and exc.status == 404 and len(apis) > 1:
                    apis.pop(0)  # events.k8s.io not served: core/v1
                    continue
                self._refused(exc, Stream(w, None), failures)
                wait = self._backoff(failures)
                failures += 1
                json_line(event="events-error", attach=self.name, error=f"{type(exc).__name__}: {exc}"[:300])
            if self.stop_event.wait(wait) or term.is_set():
                return

    # -- a term as leader -----------------------------------------------------------------------
    def scopes(self, w: Watched) -> list[str | None]:
        return list(self.namespaces) if w.namespaced and self.namespaces else [None]

    def start(self) -> None:
        """Per watched (kind, scope): resume the watch from the ledger's cursor, or list (in
        WATCHED order, references before referrers, each stream's thread after the one before);
        in schedule mode, first make the ledger's SchedulerConfig serve the profile (profile.py).
        ``synced`` is logged once every stream has listed or resumed its watch."""
        self.streams = []
        self._synced_logged = False
        if self.mode in ("schedule", "shadow"):
            line = P.configure(self.db, self.cluster, self.profile, shadow=self.mode == "shadow")
            json_line(event="config", attach=self.name, schedulerName=self.profile, result=line)
        for w in WATCHED:
            for scope in self.scopes(w):
                st = Stream(w, scope)
                cursor = self.mirror.cursor(w, scope)
                if cursor is None:
                    st.need_list = True
                else:
                    st.seen_rv = st.done_rv = cursor
                    st.ready.set()
                self.streams.append(st)

    def lag_rv(self) -> int:
        lag = 0
        for st in self.streams:
            seen, done = rv_number(st.seen_rv), rv_number(st.done_rv)
            if seen is not None and done is not None:
                lag = max(lag, seen - done)
        return lag

    def progress(self, force: bool = False) -> None:
        now = time.monotonic()
        self.metrics.lag_rv.set(self.lag_rv())
        self.metrics.queue_depth.set(self.q.qsize())
        if not force and now - self._last_progress < self.progress_every:
            return
        self._last_progress = now
        json_line(
            event="progress",
            attach=self.name,
            queue=self.q.qsize(),
            lag_rv=self.lag_rv(),
            lag_seconds=round(self._lag_seconds, 3),
            deferred=len(self.deferred),
            **(
                {
                    "binds": self.binder.sent,
                    "evictions": self.binder.evicted,
                    "conditions": self.conditions.sent if self.conditions else 0,
                    "call_failures": self.binder.failed + (self.conditions.failed if self.conditions else 0),
                }
                if self.binder
                else {}
            ),
            **self.counts,
        )

    def lead(self) -> None:
        self.start()
        term = threading.Event()
        threads = [
            threading.Thread(
                target=self._watch,
                args=(st, term, self.streams[i - 1].ready if i else None),
                name=f"watch-{st.name}",
                daemon=True,
            )
            for i, st in enumerate(self.streams)
        ]
        if self.events_every > 0:
            threads.append(
                threading.Thread(target=self._poll_events, args=(term,), name="events", daemon=True)
            )
        for t in threads:
            t.start()
        try:
            while not self.stop_event.is_set():
                if not self._loop.still_leader():
                    json_line(event="leadership-lost", attach=self.name)
                    return
                if self.binder is not None and time.monotonic() - self._last_bind >= 0.2:
                    self._last_bind = time.monotonic()
                    calls = self.binder.run_once()
                    calls += self.conditions.run_once() if self.conditions is not None else 0
                    if calls:
                        self.progress(force=True)
                try:
                    item = self.q.get(timeout=0.5)
                except queue.Empty:
                    if self.deferred and all(st.synced for st in self.streams):
                        self._retry_deferred(final=True)
                    self._lag_seconds = 0.0
                    self.metrics.lag_seconds.set(0.0)
                    self.progress()
                    continue
                self.handle(item)
                self.progress(force=self.q.empty() and item.kind != "BOOKMARK")
        finally:
            term.set()

    def run(self) -> int:
        def on_signal(signum: int, _frame: Any) -> None:
            json_line(event="stopping", attach=self.name, signal=signum)
            self.stop_event.set()
            if self.remote.waiting:  # the main thread is in a call to the cluster: abandon it
                raise Interrupted()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        json_line(event="started", attach=self.name, cluster=self.cluster, mode=self.mode)

        def term() -> None:
            json_line(event="leader", attach=self.name)
            self.lead()

        def on_error(exc: BaseException) -> None:
            # the cluster or the database went away while starting or writing, or a change
            # could not be recorded: the next term starts again from the ledger's cursor (what
            # was written is all that counts)
            json_line(event="error", attach=self.name, error=f"{type(exc).__name__}: {exc}"[:300])
            if not isinstance(exc, (RemoteError, psycopg.Error, PoolTimeout)):
                log.exception("attach term failed; starting again from the ledger")
            self.stop_event.wait(1.0)

        def after() -> None:
            self.q = queue.Queue(maxsize=self.queue_size)  # a new term starts from the ledger
            self.deferred = []

        try:
            self._loop.run(term, errors=(Exception,), on_error=on_error, after=after)
        except Interrupted:
            pass
        finally:
            json_line(event="stopped", attach=self.name, exit=self.exit_code, **self.counts)
        return self.exit_code


def _usable_rv(rv: str) -> str:
    """``rv`` if a watch can resume from it (not digits past int64: a broken or hostile server)."""
    return "" if rv.isdigit() and rv_number(rv) is None else rv
