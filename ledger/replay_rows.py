"""Lean replay rows: the log read on a raw psycopg connection, decoded only as far as asked.

``StoredEvent`` (ledger/store.py) decodes everything up front: a UUID, two datetimes, two JSON
documents and a dataclass per event. A fold usually reads the position, stream, type and
``data`` only. ``ReplayRow`` keeps the wire bytes of the other columns and decodes them on
first access:

- ``position``, ``stream``, ``version``, ``type``, ``schema_version``: plain attributes;
- ``data``: the payload upcast to the current schema (``raw_data`` without upcasting),
  decoded with orjson on first access and cached;
- ``meta``, ``event_id``, ``recorded_at``, ``effective_at``: decoded on access.

Rows are read a page at a time (``WHERE position > after ORDER BY position LIMIT n``) by one
statement with binary results; the uuid, jsonb and timestamptz columns are selected through
their send functions (``uuid_send`` ...), i.e. as ``bytea`` holding their binary wire format,
so psycopg builds one tuple of ints, strs and bytes per row and decodes nothing else. (This
measured cheaper on the client than ``COPY ... TO STDOUT (FORMAT BINARY)`` with the same
columns, whose per-column loaders run in Python-visible steps.)

Use ``read_rows`` for one page (a catch-up loop: ``rows = read_rows(raw, after=pos, limit=n)``)
and ``iter_rows`` to stream a whole range page by page (pipelined: the server prepares the next
page while the caller folds the current one). Both take a raw psycopg connection (see
``connect``); in autocommit mode every page is its own statement, inside a transaction all pages
share its snapshot.
"""

from __future__ import annotations

import uuid
from collections.abc import Generator, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from itertools import chain, islice
from typing import Any

import orjson
import psycopg

from ledger import events as registry

_PG_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
_REGISTRY = registry.REGISTRY
# ``data`` travels as its UTF-8 JSON text in a bytea (what jsonb's binary wire format holds after
# its version byte): orjson decodes psycopg's bytes as they are, no slice copied per row. The
# columns a fold rarely reads
# travel as ONE bytea (psycopg builds one bytes object instead of four): the event id (16
# bytes), recorded_at and effective_at (8 bytes each, big-endian microseconds since
# 2000-01-01 UTC), then meta in jsonb's wire format.
_COLUMNS = (
    "position, stream, version, type, schema_version, convert_to(data::text, 'UTF8'), "
    "uuid_send(event_id) || timestamptz_send(recorded_at) || timestamptz_send(effective_at) || jsonb_send(meta)"
)
_META = 33  # offset of meta's JSON text in the packed column (16 + 8 + 8 + the jsonb version byte)


# the last (wire bytes, datetime) decoded, replaced as one tuple (thread-safe): a run's rows
# share their time
_last_ts: tuple[bytes, datetime] = (b"", _PG_EPOCH)


def _ts(wire: bytes) -> datetime:
    global _last_ts
    last = _last_ts
    if wire == last[0]:
        return last[1]
    dt = _PG_EPOCH + timedelta(microseconds=int.from_bytes(wire, "big", signed=True))
    _last_ts = (wire, dt)
    return dt


class ReplayRow:
    """One stored event, decoded lazily (see the module docstring).

    It holds the row tuple psycopg built, its position and type (read several times per row by
    a replay) and nothing else until ``data`` is read; the other plain columns are read through
    properties.
    """

    __slots__ = ("_r", "_obj", "position", "type")

    position: int
    type: str

    @property
    def stream(self) -> str:
        return self._r[1]  # type: ignore[no-any-return]

    @property
    def version(self) -> int:
        return self._r[2]  # type: ignore[no-any-return]

    @property
    def schema_version(self) -> int:
        return self._r[4]  # type: ignore[no-any-return]

    def __init__(self, r: Sequence[Any]) -> None:
        self._r = r
        self._obj: dict[str, Any] | None = None
        self.position = r[0]
        self.type = r[3]

    @property
    def data(self) -> dict[str, Any]:
        """The payload, upcast to the current schema version (decoded once, then cached)."""
        obj = self._obj
        if obj is None:
            r = self._r
            obj = orjson.loads(r[5])
            reg = _REGISTRY.get(r[3])
            if reg is not None and r[4] < reg.version:  # an older schema: upcast (rare)
                obj = registry.upcast(r[3], r[4], obj)
            self._obj = obj
        return obj

    @property
    def raw_data(self) -> dict[str, Any]:
        """The payload as stored (its own schema version), decoded afresh."""
        return orjson.loads(self._r[5])  # type: ignore[no-any-return]

    @property
    def data_text(self) -> bytes:
        """The stored JSON text of the payload (PostgreSQL's jsonb rendering, not canonical)."""
        return self._r[5]  # type: ignore[no-any-return]

    @property
    def meta(self) -> dict[str, Any]:
        return orjson.loads(self._r[6][_META:])  # type: ignore[no-any-return]

    @property
    def meta_text(self) -> bytes:
        return bytes(self._r[6][_META:])

    @property
    def event_id(self) -> uuid.UUID:
        return uuid.UUID(bytes=bytes(self._r[6][:16]))

    @property
    def recorded_at(self) -> datetime:
        return _ts(self._r[6][16:24])

    @property
    def effective_at(self) -> datetime:
        return _ts(self._r[6][24:32])

    def __repr__(self) -> str:
        return f"ReplayRow(position={self.position}, stream={self.stream!r}, version={self.version}, type={self.type!r})"


class ChainRow(ReplayRow):
    """A ``ReplayRow`` with the stored chain link (``prev_hash``, ``hash``), for verification."""

    __slots__ = ("prev_hash", "hash")

    prev_hash: bytes
    hash: bytes

    def __init__(self, r: Sequence[Any]) -> None:
        super().__init__(r)
        self.prev_hash = bytes(r[7])
        self.hash = bytes(r[8])


def connect(url: str | None = None) -> psycopg.Connection[Any]:
    """A raw autocommit connection to the ledger (default: the configured one) for readers."""
    from ledger import db

    return psycopg.connect(db.libpq_url(url or db.server_url()), autocommit=True)


def _query(
    after: int,
    limit: int,
    upto: int | None,
    types: Sequence[str] | None,
    chain: bool = False,
    table: str = "events",
) -> tuple[str, list[Any]]:
    where = "position > %s"
    params: list[Any] = [int(after)]
    if upto is not None:
        where += " AND position <= %s"
        params.append(int(upto))
    if types:
        where += " AND type = ANY(%s)"
        params.append(list(types))
    cols = _COLUMNS + (", prev_hash, hash" if chain else "")
    params.append(int(limit))
    return f"SELECT {cols} FROM {table} WHERE {where} ORDER BY position LIMIT %s", params


def read_rows(
    conn: psycopg.Connection[Any],
    after: int = 0,
    limit: int = 10_000,
    *,
    upto: int | None = None,
    types: Sequence[str] | None = None,
) -> list[ReplayRow]:
    """At most ``limit`` events with ``after < position [<= upto]`` (of ``types``), in order."""
    query, params = _query(after, limit, upto, types)
    with conn.cursor(binary=True) as cur:
        cur.execute(query, params)
        return list(map(ReplayRow, cur.fetchall()))


def read_chain(
    conn: psycopg.Connection[Any], after: int = 0, limit: int = 10_000, *, table: str = "events"
) -> list[ChainRow]:
    """Like ``read_rows``, with each event's stored ``prev_hash`` and ``hash``; ``table``: an
    archived partition (``event_archive."events_p0"``, ledger/verify.py) instead of the log."""
    query, params = _query(after, limit, None, None, chain=True, table=table)
    with conn.cursor(binary=True) as cur:
        cur.execute(query, params)
        return list(map(ChainRow, cur.fetchall()))


def iter_rows(
    conn: psycopg.Connection[Any],
    after: int = 0,
    upto: int | None = None,
    *,
    page: int = 10_000,
    types: Sequence[str] | None = None,
) -> RowStream:
    """Every event with ``after < position [<= upto]`` in order, read ``page`` rows at a time.

    The pages are pipelined: as soon as a page has arrived, the query for the next one is sent
    (its first position is the last one just received), so the server reads and encodes page
    k+1 while the caller consumes page k. Every ``_DRAIN`` rows handed out, what has arrived of
    page k+1 is moved from the socket into libpq's buffer (a non-blocking read): over a Unix
    socket the server otherwise stalls once the socket buffer (~200 kB, a few hundred rows) is
    full, and the rest of the page waits for the next fetch. The connection is in pipeline mode
    while the iterator is open: use it for nothing else meanwhile; a caller that may stop early
    closes it (``with iter_rows(...) as rows:``, or ``close()``), which ends the pipeline.
    """
    return RowStream(_pages(conn, after, upto, page, types))


class RowStream:
    """The rows of ``iter_rows``: iterate it once; ``close()`` (or leaving its ``with`` block)
    ends the pipeline before all rows are read. Iterating hands out rows by C iterators (``chain`` over
    ``map(ReplayRow, page)``): no Python frame is resumed per row."""

    __slots__ = ("_pages", "_rows")

    def __init__(self, pages: Generator[Iterator[ReplayRow], None, None]) -> None:
        self._pages = pages
        self._rows = chain.from_iterable(pages)

    def __iter__(self) -> Iterator[ReplayRow]:
        return self._rows

    def __next__(self) -> ReplayRow:
        return next(self._rows)

    def close(self) -> None:
        self._pages.close()

    def __enter__(self) -> RowStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_DRAIN = 250  # rows handed out between two drains of the socket into libpq's buffer


def _pages(
    conn: psycopg.Connection[Any], after: int, upto: int | None, page: int, types: Sequence[str] | None
) -> Generator[Iterator[ReplayRow], None, None]:
    pgconn = conn.pgconn
    with conn.pipeline(), conn.cursor(binary=True) as cur, conn.cursor(binary=True) as nxt:
        query, params = _query(after, page, upto, types)
        cur.execute(query, params)
        while True:
            rows = cur.fetchall()
            full = len(rows) == page
            if full:
                query, params = _query(rows[-1][0], page, upto, types)
                nxt.execute(query, params)  # sent now, fetched after this page is consumed
            it = map(ReplayRow, rows)
            for _ in range(0, len(rows), _DRAIN):
                yield islice(it, _DRAIN)
                if full:
                    pgconn.consume_input()  # what has arrived of the next page; never blocks
            if not full:
                return
            cur, nxt = nxt, cur
