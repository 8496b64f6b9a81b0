"""Watch = a tail of the log.

A watch from ``resourceVersion`` N starts from the state of the watched kind as of position N
(the ``objects`` projection when N is the head, else the same fold replayed from the log) and
then folds every later event, in position order (no N or N = 0, upstream's "any": the
current objects first, as ADDED), emitting ADDED/MODIFIED/DELETED for the
objects it changes with ``resourceVersion`` = that event's position. Appends are serialised
(position order = commit order), so resuming from the last position seen misses nothing and
repeats nothing. LISTEN/NOTIFY wakes the tail; a one-second poll covers a missed notification.

The log keeps every position, but a cluster's API server keeps only a window of history: with
``PODLEDGER_K8S_WATCH_WINDOW=N`` a watch from a resourceVersion more than N positions behind
the head ends at once with an ERROR event holding a 410 ``Expired`` Status, as upstream does
after compaction ("too old resource version"), and the client must list again.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import orjson
from fastapi.concurrency import run_in_threadpool

from api.k8s import backend
from api.k8s import table as T
from api.k8s.objects import Selector, view
from api.k8s.resources import Resource
from ledger.database import Database

PAGE = 500
WAIT_SECONDS = 1.0
BOOKMARK_SECONDS = 5.0


@dataclass
class WatchParams:
    namespace: str | None
    selector: Selector
    start: int | None  # None (resourceVersion unset or 0): current state first as ADDED, then the tail
    bookmarks: bool
    timeout: float | None
    as_table: bool
    include: str = "Metadata"


def _with_key(key: backend.Key, row: backend.Row) -> backend.Row:
    return {**row, "kind": key[0], "namespace": key[1], "name": key[2]}


def initial_state(db: Database, res: Resource, p: WatchParams) -> tuple[int, dict[backend.Key, Any], bool]:
    """(position, rows as of it, send ADDED for them first)."""
    with backend.snapshot(db) as conn:
        head = backend.head(conn)
        current = backend.rows(conn, res.kind, p.namespace if res.namespaced else None)
    if p.start is None or p.start >= head:
        state: dict[backend.Key, Any] = {(r["kind"], r["namespace"], r["name"]): r for r in current}
        return head, state, p.start is None
    folded = backend.state_at(db, res.kind, p.start)
    state = {
        k: v for k, v in folded.items() if p.namespace is None or not res.namespaced or k[1] == p.namespace
    }
    return p.start, state, False


def window() -> int | None:
    """Positions of history a watch may start behind the head (None: all of the log)."""
    raw = os.environ.get("PODLEDGER_K8S_WATCH_WINDOW", "").strip()
    return int(raw) if raw.isdigit() else None


def expired(start: int | None, head: int) -> dict[str, Any] | None:
    """The 410 Status of a watch from ``start`` when that is older than the window, else None."""
    keep = window()
    if keep is None or start is None or start <= 0 or start >= head - keep:
        return None
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"too old resource version: {start} ({head - keep})",
        "reason": "Expired",
        "code": 410,
    }


def _encode(kind: str, obj: dict[str, Any]) -> bytes:
    return orjson.dumps({"type": kind, "object": obj}) + b"\n"


class _Emitter:
    def __init__(self, db: Database, res: Resource, p: WatchParams) -> None:
        self.db, self.res, self.p = db, res, p
        self.columns_sent = False

    def ctx(self) -> dict[str, Any]:
        if self.p.as_table and self.res.kind == "PodGroup":
            with self.db.connect() as conn:
                return {"group_pods": backend.group_pod_counts(conn)}
        return {}

    def encode(self, typ: str, obj: dict[str, Any], ctx: dict[str, Any]) -> bytes:
        if not self.p.as_table or typ == "BOOKMARK":
            return _encode(typ, obj)
        tbl = T.table(
            self.res,
            [obj],
            resource_version=obj["metadata"]["resourceVersion"],
            include=self.p.include,
            ctx=ctx,
            columns=not self.columns_sent,
        )
        self.columns_sent = True
        return _encode(typ, tbl)


def changes(
    res: Resource, p: WatchParams, state: dict[backend.Key, Any], ev: Any
) -> list[tuple[str, dict[str, Any]]]:
    """The watch events one log event produces (and fold it into ``state``)."""
    keys = [k for k in backend.touched(ev) if k[0] == res.kind]
    keys = [k for k in keys if p.namespace is None or not res.namespaced or k[1] == p.namespace]
    if not keys:
        return []
    key = keys[0]
    old = state.get(key)
    old_obj = view(res, _with_key(key, old)) if old is not None else None
    backend.fold(state, ev)
    new = state.get(key)
    if new is None:
        state.pop(key, None)
    new_obj = view(res, _with_key(key, new), rv=ev.position) if new is not None else None
    old_match = old_obj is not None and p.selector.matches(old_obj)
    new_match = new_obj is not None and p.selector.matches(new_obj)
    if new_obj is None:
        if old_match and old_obj is not None:
            old_obj["metadata"]["resourceVersion"] = str(ev.position)
            return [("DELETED", old_obj)]
        return []
    if new_match:
        return [("MODIFIED" if old_match else "ADDED", new_obj)]
    if old_match:
        return [("DELETED", new_obj)]
    return []


async def stream(db: Database, res: Resource, p: WatchParams, request: Any) -> AsyncIterator[bytes]:
    em = _Emitter(db, res, p)
    lst = await run_in_threadpool(backend.listener, db)  # LISTEN before the first catch-up read
    try:
        gone = expired(p.start, await run_in_threadpool(_head, db))
        if gone is not None:
            yield _encode("ERROR", gone)
            return
        pos, state, send_initial = await run_in_threadpool(initial_state, db, res, p)
        t0 = last = time.monotonic()
        if send_initial:
            ctx = await run_in_threadpool(em.ctx)
            for key in sorted(state):
                obj = view(res, _with_key(key, state[key]))
                if p.selector.matches(obj):
                    yield em.encode("ADDED", obj, ctx)
        while True:
            batch = await run_in_threadpool(_read, db, pos)
            out: list[tuple[str, dict[str, Any]]] = []
            for ev in batch:
                out.extend(changes(res, p, state, ev))
                pos = ev.position
            if out:
                ctx = await run_in_threadpool(em.ctx)
                for typ, obj in out:
                    yield em.encode(typ, obj, ctx)
                last = time.monotonic()
            now = time.monotonic()
            if p.timeout is not None and now - t0 >= p.timeout:
                return
            if await request.is_disconnected():
                return
            if len(batch) == PAGE:
                continue
            if p.bookmarks and now - last >= BOOKMARK_SECONDS:
                yield em.encode("BOOKMARK", _bookmark(res, pos), {})
                last = now
            if not batch:
                wait = (
                    WAIT_SECONDS
                    if p.timeout is None
                    else max(0.05, min(WAIT_SECONDS, p.timeout - (now - t0)))
                )
                await run_in_threadpool(lst.wait, wait)
    finally:
        await run_in_threadpool(lst.close)


def _bookmark(res: Resource, pos: int) -> dict[str, Any]:
    return {"kind": res.kind, "apiVersion": res.api_version, "metadata": {"resourceVersion": str(pos)}}


def _head(db: Database) -> int:
    with db.connect() as conn:
        return backend.head(conn)


def _read(db: Database, after: int) -> list[Any]:
    with db.connect() as conn:
        return backend.read_events(conn, after, PAGE)
