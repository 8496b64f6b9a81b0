"""``kubectl get events -w``: a watch on the Events derived from the log's decisions.

Events are not stored: they are aggregated from the scheduler's decision events
(``api/k8s/events.py``). The watch sends the current ones as ADDED (upstream's "any" start),
then, each time the log's head moves (LISTEN/NOTIFY, a one-second poll as backstop), derives
them again and sends the new ones as ADDED and those whose count or last time changed as
MODIFIED, with ``resourceVersion`` = the position of the decision that changed them."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import orjson
from fastapi.concurrency import run_in_threadpool

from api.k8s import backend
from api.k8s import events as E
from api.k8s import table as T
from api.k8s.resources import Resource
from api.k8s.watch import WAIT_SECONDS, WatchParams
from ledger.database import Database


def _derive(db: Database, res: Resource, namespace: str | None) -> tuple[int, dict[str, dict[str, Any]]]:
    with backend.snapshot(db) as conn:
        head = backend.head(conn)
        found = E.derive(conn, head, namespace)
    conv = E.events_v1 if res.group == "events.k8s.io" else E.core_event
    out = {}
    for e in found:
        obj = conv(e)
        out[f"{obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"] = obj
    return head, out


def _head(db: Database) -> int:
    with db.connect() as conn:
        return backend.head(conn)


async def stream(db: Database, res: Resource, p: WatchParams, request: Any) -> AsyncIterator[bytes]:
    def encode(typ: str, obj: dict[str, Any], first: bool) -> bytes:
        if p.as_table:
            rv = obj["metadata"].get("resourceVersion", "0")
            obj = T.table(res, [obj], resource_version=rv, include=p.include, columns=first)
        return orjson.dumps({"type": typ, "object": obj}) + b"\n"

    lst = await run_in_threadpool(backend.listener, db)
    try:
        head, seen = await run_in_threadpool(_derive, db, res, p.namespace)
        first = True
        for obj in seen.values():
            if p.selector.matches(obj):
                yield encode("ADDED", obj, first)
                first = False
        t0 = time.monotonic()
        while True:
            now = time.monotonic()
            if p.timeout is not None and now - t0 >= p.timeout:
                return
            if await request.is_disconnected():
                return
            wait = WAIT_SECONDS if p.timeout is None else max(0.05, min(WAIT_SECONDS, p.timeout - (now - t0)))
            await run_in_threadpool(lst.wait, wait)
            if await run_in_threadpool(_head, db) == head:
                continue
            head, current = await run_in_threadpool(_derive, db, res, p.namespace)
            for key, obj in current.items():
                old = seen.get(key)
                if old == obj or not p.selector.matches(obj):
                    continue
                yield encode("ADDED" if old is None else "MODIFIED", obj, first)
                first = False
            seen = current
    finally:
        await run_in_threadpool(lst.close)
