"""The log: pages by position, a live Server-Sent Events stream, and state at a position."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any

import orjson
import sqlalchemy as sa
from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse
from sqlalchemy.engine import Engine

from api.app import ApiError, context
from api.auth import Principal
from api.routes.deps import AUTH_ERRORS, COMMON_ERRORS, _err, reader
from api.schemas import Event, EventPage, StateAt
from ledger import events as registry
from ledger import store
from ledger.store import StoredEvent

router = APIRouter(prefix="/podledger/v1", tags=["log"])

POLL_SECONDS = 0.25
KEEPALIVE_SECONDS = 15.0


def event_json(ev: StoredEvent) -> dict[str, Any]:
    return {
        "position": ev.position,
        "stream": ev.stream,
        "version": ev.version,
        "type": ev.type,
        "schemaVersion": ev.schema_version,
        "eventId": str(ev.event_id),
        "data": ev.data,
        "meta": ev.meta,
        "recordedAt": ev.recorded_at.isoformat(),
        "effectiveAt": ev.effective_at.isoformat(),
    }


def read_events(
    engine: Engine,
    after: int,
    limit: int,
    types: list[str] | None = None,
    stream: str | None = None,
) -> list[StoredEvent]:
    """Events after ``after`` in position order; ``stream`` matches a stream or a prefix ending in ``/``."""
    if not stream:
        return store.read_all(engine, after=after, limit=limit, types=types or None)
    where = ["position > :a"]
    params: dict[str, Any] = {"a": after, "lim": limit}
    if stream.endswith("/"):
        where.append("stream LIKE :s")
        params["s"] = stream.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    else:
        where.append("stream = :s")
        params["s"] = stream
    if types:
        where.append("type = ANY(:t)")
        params["t"] = types
    q = (
        "SELECT position, stream, version, type, schema_version, event_id, data, meta, recorded_at, effective_at "
        f"FROM events WHERE {' AND '.join(where)} ORDER BY position LIMIT :lim"
    )
    with engine.connect() as conn:
        rows = conn.execute(sa.text(q), params).all()
    out = []
    for r in rows:
        data = registry.upcast(r.type, r.schema_version, dict(r.data))
        out.append(StoredEvent(*r[:6], data, r.meta, r.recorded_at, r.effective_at))  # type: ignore[arg-type]
    return out


def head(engine: Engine) -> int:
    return int(store.head(engine))


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
    engine = context(request).engine

    def read() -> EventPage:
        evs = read_events(engine, after, limit, _types(type_), stream)
        return EventPage(
            items=[Event.model_validate(event_json(e)) for e in evs],
            next=evs[-1].position if evs else after,
            head=head(engine),
        )

    return await run_in_threadpool(read)


def _sse(ev: StoredEvent) -> bytes:
    return b"id: %d\nevent: %s\ndata: %s\n\n" % (ev.position, ev.type.encode(), orjson.dumps(event_json(ev)))


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
                            "data": {"type": "string", "description": "The event as JSON (see the Event schema)"},
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
    after: Annotated[int | None, Query(ge=0, le=2**62, description="Default: the current head (only new events)")] = None,
    max_events: Annotated[int | None, Query(ge=1, le=100000, description="Close after this many events")] = None,
    timeout: Annotated[float | None, Query(gt=0, le=86400, description="Close after this many seconds")] = None,
    type_: Annotated[list[str] | None, Query(alias="type")] = None,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
) -> StreamingResponse:
    engine = context(request).engine
    types = _types(type_)
    if last_event_id is not None and last_event_id.strip().isdigit():
        start: int | None = int(last_event_id.strip())
    else:
        start = after
    if start is None:
        start = await run_in_threadpool(head, engine)

    async def gen() -> AsyncIterator[bytes]:
        pos = start
        sent = 0
        t0 = time.monotonic()
        last_write = t0
        yield b"retry: 2000\n: podledger event stream\n\n"
        while True:
            want = 500 if max_events is None else min(500, max_events - sent)
            batch = await run_in_threadpool(read_events, engine, pos, want, types)
            for ev in batch:
                yield _sse(ev)
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


@router.get(
    "/state",
    response_model=StateAt,
    summary="Every live object as of a log position",
    responses={**AUTH_ERRORS, 422: _err("Invalid request"), 501: _err("The audit service is not part of this build")},
)
async def state(
    request: Request,
    _p: Annotated[Principal, Depends(reader)],
    at: Annotated[int | None, Query(ge=0, le=2**62, description="Log position (default: the head)")] = None,
) -> StateAt:
    engine = context(request).engine

    def run() -> StateAt:
        from api import audit

        pos = head(engine) if at is None else at
        try:
            return StateAt.model_validate(audit.state_at(engine, pos))
        except (ImportError, AttributeError, NotImplementedError) as exc:
            raise ApiError(501, "not_implemented", f"the audit service is not available in this build ({exc})") from None

    return await run_in_threadpool(run)


__all__ = ["router", "event_json", "read_events"]
