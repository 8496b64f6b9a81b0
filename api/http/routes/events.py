"""The log: pages by position and a live Server-Sent Events stream."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Annotated

import orjson
from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse

from api.http.auth import Principal
from api.http.context import context
from api.http.routes.deps import COMMON_ERRORS, reader
from api.http.routes.paths import PREFIX
from api.http.schemas import Event, EventPage
from api.services.log import event_json, head, read_events
from ledger.store import StoredEvent

router = APIRouter(prefix=PREFIX, tags=["log"])

POLL_SECONDS = 0.25
KEEPALIVE_SECONDS = 15.0


def _types(type_: list[str] | None) -> list[str] | None:
    if not type_:
        return None
    out = [t.strip() for item in type_ for t in item.split(",") if t.strip()]
    return out or None


@router.get(
    "/events",
    response_model=EventPage,
    summary="Read the log by position",
    description="Events with `position > after`, oldest first. Continue with `after=next`.",
    responses=COMMON_ERRORS,
)
async def list_events(
    request: Request,
    _p: Annotated[Principal, Depends(reader)],
    after: Annotated[int, Query(ge=0, le=2**62)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    type_: Annotated[
        list[str] | None, Query(alias="type", description="Only these event types (repeat or comma-separate)")
    ] = None,
    stream: Annotated[
        str | None, Query(description="One stream, or a prefix ending in `/` (e.g. `sched/`)", max_length=512)
    ] = None,
) -> EventPage:
    ctx = context(request)

    def read() -> EventPage:
        db = ctx.read_db
        evs = read_events(db, after, limit, _types(type_), stream)
        return EventPage(
            items=[Event.model_validate(event_json(e)) for e in evs],
            next=evs[-1].position if evs else after,
            head=head(db),
        )

    return await run_in_threadpool(read)


def _sse(ev: StoredEvent) -> bytes:
    return b"id: %d\nevent: %s\ndata: %s\n\n" % (ev.position, ev.type.encode(), orjson.dumps(event_json(ev)))


def _sse_brief(ev: StoredEvent) -> bytes:
    """An unnamed message (a browser's ``EventSource.onmessage`` gets it) with the position and
    type only: what the dashboard needs to know that it should refresh."""
    return b"id: %d\ndata: %s\n\n" % (ev.position, orjson.dumps({"position": ev.position, "type": ev.type}))


@router.get(
    "/events/stream",
    summary="Follow the log live (Server-Sent Events)",
    description="Each event is sent as `id: <position>`, `event: <type>`, `data: <event JSON>`. Resumes "
    "after `Last-Event-ID` (or `after`). `max_events` and `timeout` bound the stream.",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "An SSE stream; each message carries one event of the log",
            "content": {
                "text/event-stream": {
                    "schema": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "string", "description": "The event's log position"},
                            "event": {"type": "string", "description": "The event type"},
                            "data": {
                                "type": "string",
                                "description": "The event as JSON (see the Event schema)",
                            },
                        },
                        "required": ["data"],
                    },
                    "example": 'id: 42\nevent: PodBound\ndata: {"position": 42, "type": "PodBound", ...}\n\n',
                }
            },
        },
        **COMMON_ERRORS,
    },
)
async def stream_events(
    request: Request,
    _p: Annotated[Principal, Depends(reader)],
    after: Annotated[
        int | None, Query(ge=0, le=2**62, description="Default: the current head (only new events)")
    ] = None,
    max_events: Annotated[
        int | None, Query(ge=1, le=100000, description="Close after this many events")
    ] = None,
    timeout: Annotated[
        float | None, Query(gt=0, le=86400, description="Close after this many seconds")
    ] = None,
    type_: Annotated[list[str] | None, Query(alias="type")] = None,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
) -> StreamingResponse:
    return await event_stream(request, after, max_events, timeout, _types(type_), last_event_id)


async def event_stream(
    request: Request,
    after: int | None,
    max_events: int | None,
    timeout: float | None,
    types: list[str] | None,
    last_event_id: str | None,
    *,
    brief: bool = False,
) -> StreamingResponse:
    """The SSE response of ``/events/stream``; ``brief`` sends unnamed position-and-type messages
    (the dashboard's live refresh, ``/live``)."""
    db = context(request).db
    encode = _sse_brief if brief else _sse
    if last_event_id is not None and last_event_id.strip().isdigit():
        start: int | None = int(last_event_id.strip())
    else:
        start = after
    if start is None:
        start = await run_in_threadpool(head, db)

    async def gen() -> AsyncIterator[bytes]:
        pos = start
        sent = 0
        t0 = time.monotonic()
        last_write = t0
        yield b"retry: 2000\n: podledger event stream\n\n"
        while True:
            want = 500 if max_events is None else min(500, max_events - sent)
            batch = await run_in_threadpool(read_events, db, pos, want, types)
            for ev in batch:
                yield encode(ev)
                pos = ev.position
                sent += 1
            now = time.monotonic()
            if batch:
                last_write = now
            if max_events is not None and sent >= max_events:
                return
            if timeout is not None and now - t0 >= timeout:
                return
            if await request.is_disconnected():
                return
            if not batch:
                if now - last_write >= KEEPALIVE_SECONDS:
                    yield b": keepalive\n\n"
                    last_write = now
                await asyncio.sleep(POLL_SECONDS)

    return StreamingResponse(
        gen(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


__all__ = ["event_stream", "router"]
