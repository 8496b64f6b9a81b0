"""The append of two or more events (``ledger.store.append``/``append_stored`` delegate here).

Round trips, for an append that is its own transaction (an ``Engine`` target, COPY-sized):

1. ``BEGIN; SELECT ... ledger_begin_batch(...); COPY events ... FROM STDIN (FORMAT BINARY)``
   as one simple-query message, sent without waiting (libpq ``send_query``): bump the stream
   versions, bound the idle time, take the ledger lock, read the chain head and the server's
   clock (the batch's ``recorded_at``, part of every event hash), then wait for the rows
   (CopyInResponse). The first rows are encoded while the server runs the bump;
2. the COPY rows, streamed in chunks as they are chained, and CopyDone;
3. ``SELECT currval(...); COMMIT`` as one message.

With event ids chosen by the caller (the scheduler's content-addressed ids) the idempotency
check (which of them are stored) rides in message 1 too, gating the bump; it used to be a
round trip of its own before it.

Three round trips, the same as a bare ``COPY`` and ``COMMIT`` (the COPY used to be a
message of its own after the bump's answer: four; through SQLAlchemy's transaction and
psycopg's pipeline it took seven). A batch that must not be written after all (a re-send, a
version conflict, an invalid event) ends the COPY with CopyFail and rolls back. Inside a
caller's transaction a failed COPY would abort the caller's transaction, so the COPY is sent
as a message of its own after the checks (one round trip more; ``BEGIN`` only if none is
open yet) and there is no step 3: the last position drawn before the batch is read in step
1, under the lock (``_LAST_DRAWN``); below ``COPY_THRESHOLD_TX`` events the COPY is one
``INSERT ... RETURNING``. The stream names travel as JSON inside the statement text,
dollar-quoted with a tag the JSON does not contain (no quoting of user text in SQL), parsed
on the server by ``jsonb``.

The cyclic garbage collector's settings are the process's, set at its entry point
(``api/process.py``), not changed here.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from datetime import datetime
from typing import TYPE_CHECKING, Any

import orjson
import psycopg
from psycopg import generators, pq

from ledger.canonical import GENESIS, event_hash
from ledger.copy_rows import COPY_HEADER, COPY_TRAILER, chain_rows, copy_parts, recorded_parts
from ledger.errors import ConcurrencyError, EventValidationError, IdempotencyConflict
from ledger.simple_query import literal
from ledger.simple_query import results as _results
from ledger.simple_query import send as _send

if TYPE_CHECKING:
    from ledger.store import NewEvent, _Prepared

COPY_THRESHOLD = 64
# In a caller's transaction (a scheduler flush, a request) one INSERT ... RETURNING is one round
# trip, COPY two (CopyInResponse, then the data): below this size the INSERT wins on a loaded
# machine (steady arrival in bench.endtoend: batches of ~20-200 events).
COPY_THRESHOLD_TX = 256
CHUNK = 128  # events prepared and sent at a time by a COPY-sized batch of its own transaction
_PUT_MAX = 1 << 20  # bytes handed to libpq at a time

_COPY_SQL = (
    b"COPY events (stream, version, type, schema_version, event_id, data, meta, effective_at, "
    b"prev_hash, hash, recorded_at) FROM STDIN (FORMAT BINARY)"
)
# The batch's recorded_at: the server's clock, read after ledger_begin_batch took the ledger lock
# (the select list is evaluated after the function in FROM ran), so recorded times follow
# positions; the insert trigger refuses a time outside the inserting transaction.
_RECORDED = b"""to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')"""
_CURRVAL = b"SELECT currval(pg_get_serial_sequence('events', 'position'))"
# The last position drawn, read in the bump's statement after ledger_begin_batch took the ledger
# lock (the subquery refers to the function's row, so it runs after the function). Every
# writer draws positions only under that lock (ledger_append_one, this module), so a batch's
# COPY draws the next n: no ``currval`` round trip after a COPY in a caller's transaction.
_LAST_DRAWN = (
    b"(SELECT CASE WHEN q.is_called THEN q.last_value ELSE q.last_value - 1 END "
    b"FROM events_position_seq q WHERE b.r_head IS NOT DISTINCT FROM b.r_head)"
)


def _begin_sql(names: Sequence[str], counts: Sequence[int], given: Sequence[uuid.UUID] = ()) -> bytes:
    """The stream bump statement with its arguments inlined (no SQL quoting of user text).

    The stream names travel as JSON in a literal that needs no escaping
    (``simple_query.literal``), the counts as an int array literal.
    The first column is NULL when every stream was new (the versions returned are the counts,
    in the order given: nothing to send back); otherwise the (stream, version) pairs as JSON.

    With ``given`` (the event ids the caller chose) the same statement first reads which of them
    are stored (the idempotency check, a materialized CTE: the id array is parsed and looked up
    once), returned as rows (event id, position, NULL, NULL), and the bump runs only if none
    is: its WHERE clause holds no column of the function, so the planner evaluates it once,
    before the function (a one-time filter), and a re-send bumps nothing and takes no lock.
    The check and the gate read the same rows, so the answer is either the stored ids or the
    bump's row (whose recorded time is never NULL)."""
    streams = literal(orjson.dumps(list(names)))
    ns = b"'{%b}'" % ",".join(map(str, counts)).encode()
    if given:
        # uuid.UUID.hex is 32 hex digits (uuid input takes them without dashes; half the cost
        # of str per id): safe to inline. event_keys holds every event id (events is
        # partitioned by position: migration 0016).
        ids = b"'{" + ",".join([u.hex for u in given]).encode() + b"}'::uuid[]"
        check = (
            b"WITH k AS MATERIALIZED (SELECT event_id, position FROM event_keys WHERE event_id = ANY("
            + ids
            + b")) SELECT event_id::text, position::text, NULL, NULL FROM k UNION ALL "
        )
        gate = b" WHERE NOT EXISTS (SELECT 1 FROM k)"
    else:
        check = gate = b""
    return (
        check
        + (
            b"SELECT CASE WHEN b.r_streams = i.s AND b.r_versions = i.c THEN NULL ELSE "
            b"(SELECT json_agg(json_build_array(s, v))::text FROM unnest(b.r_streams, b.r_versions) AS u(s, v)) END, "
            b"encode(b.r_head, 'hex'), %b, %b FROM (SELECT "
            b"ARRAY(SELECT x FROM jsonb_array_elements_text(%b::jsonb) WITH ORDINALITY AS t(x, o) ORDER BY o) AS s, "
            b"%b::int[] AS c) AS i, ledger_begin_batch(i.s, i.c) AS b" % (_LAST_DRAWN, _RECORDED, streams, ns)
        )
        + gate
    )


def append_batch(
    raw: psycopg.Connection[Any],
    events: Sequence[NewEvent],
    prepare: Callable[[int, int], list[_Prepared]],
    expected_versions: Mapping[str, int] | None,
    *,
    commit: bool,
) -> tuple[list[int], list[_Prepared], bool]:
    """Append ``events`` (two or more); return (positions, prepared events, anything new).

    ``prepare(lo, hi)`` validates and encodes ``events[lo:hi]`` (``ledger.store._prepare``). ``commit``: the
    append is its own transaction on an autocommit connection: BEGIN and COMMIT are sent here,
    a failure (bad input included) rolls back, and the stream bump is sent before the events
    are validated so that the server works while the client prepares. Otherwise the append
    joins the connection's transaction, nothing is sent before every event is valid, and the
    caller commits or rolls back.
    """
    try:
        return _append(raw, events, prepare, expected_versions, commit)
    except BaseException:
        if commit and not raw.closed:
            # a broken connection: the original error is the news
            if raw.pgconn.transaction_status == pq.TransactionStatus.ACTIVE:
                _abort_copy(raw)  # the COPY sent with the bump: CopyFail, the server's error read
            if raw.pgconn.transaction_status != pq.TransactionStatus.IDLE:
                with suppress(psycopg.Error):
                    raw.execute("ROLLBACK")
        raise


def _abort_copy(raw: psycopg.Connection[Any]) -> None:
    """End a COPY in progress with CopyFail (its error result read and dropped)."""
    with suppress(psycopg.Error):
        raw.wait(generators.copy_end(raw.pgconn, b"append abandoned"))


def _copy_write(raw: psycopg.Connection[Any], data: bytes) -> None:
    """Send COPY data and flush it (the server inserts while the client prepares the next
    chunk); pieces of at most ``_PUT_MAX`` bytes, as psycopg's own COPY writer does."""
    if len(data) <= _PUT_MAX:
        raw.wait(generators.copy_to(raw.pgconn, data))
        return
    view = memoryview(data)
    for i in range(0, len(data), _PUT_MAX):
        raw.wait(generators.copy_to(raw.pgconn, view[i : i + _PUT_MAX]))


def _check_expected(streams: Mapping[str, int], expected: Mapping[str, int] | None) -> None:
    for s in expected or {}:
        if s not in streams:
            raise EventValidationError(
                f"expected version given for stream {s!r} that the batch does not touch"
            )


def _append(
    raw: psycopg.Connection[Any],
    events: Sequence[NewEvent],
    prepare: Callable[[int, int], list[_Prepared]],
    expected_versions: Mapping[str, int] | None,
    commit: bool,
) -> tuple[list[int], list[_Prepared], bool]:
    n = len(events)
    prepared = [] if commit else prepare(0, n)
    # Only ids the caller chose can be re-sent; fresh uuid4s cannot collide. Which of them are
    # stored is read in the round trip of the stream bump (``_begin_sql``).
    given = [ev.event_id for ev in events if ev.event_id is not None]
    if len(set(given)) != len(given):
        raise EventValidationError("duplicate event_id within one batch")

    counts: dict[str, int] = {}
    for ev in events:
        counts[ev.stream] = counts.get(ev.stream, 0) + 1
    if "" in counts:
        prepare(0, n)  # raises, naming the event with the empty stream
    _check_expected(counts, expected_versions)
    names = sorted(counts)  # a fixed lock order avoids deadlocks between batches
    copy = n >= (COPY_THRESHOLD if commit else COPY_THRESHOLD_TX)
    # One round trip (migrations/sql/ledger_begin_batch_v3.sql): bump the stream versions, bound
    # the idle time of this lock-holding transaction, take the ledger lock (the one the insert
    # trigger takes too; re-entrant within a transaction) and read the chain head with a
    # snapshot taken after the lock was granted. The version check below runs before any
    # position is drawn, so a loser burns none. The rows are encoded while the server works.
    begin = _begin_sql(names, [counts[s] for s in names], given)
    if raw.pgconn.transaction_status == pq.TransactionStatus.IDLE:
        begin = b"BEGIN; " + begin
    # Own transaction: the COPY rides in the same message, so the server answers the bump and
    # goes straight on to wait for the rows (one round trip less). If the batch must not be
    # written after all (a re-send, a version conflict, an invalid event) the COPY is ended
    # with CopyFail and the transaction rolled back. In a caller's transaction a failed COPY
    # would abort the caller's transaction: the COPY is sent after the checks.
    copy_sent = commit and copy
    if copy_sent:
        begin += b"; " + _COPY_SQL
    _send(raw, begin)
    # Own transaction: the events are prepared in chunks, the first while the server bumps,
    # the next ones while the server inserts the previous chunk (COPY rows stream as they are
    # chained). An invalid event in a later chunk aborts the COPY: nothing is appended, but
    # the positions the earlier chunks drew stay unused (a rollback's hole). In a caller's
    # transaction everything was prepared before anything was sent.
    hi = min(CHUNK, n) if commit and copy else n
    if commit:
        try:
            prepared = prepare(0, hi)
        except BaseException:
            with suppress(psycopg.Error):
                _results(raw)  # drain the bump's results; the caller's handler rolls back
            raise
    cache: dict[Any, tuple[Any, ...]] = {}
    parts = [copy_parts(p, cache) for p in prepared] if copy else []
    results = _results(raw)
    if copy_sent:
        results.pop()  # COPY_IN: the server waits for the rows
    res = results[-1]
    if given and res.get_value(0, 3) is None:  # stored ids, not the bump's row (``_begin_sql``)
        found = {
            uuid.UUID(bytes(res.get_value(i, 0) or b"").decode()): int(res.get_value(i, 1) or b"0")
            for i in range(res.ntuples)
        }
        if commit:
            if copy_sent:
                _abort_copy(raw)
            _send(raw, b"ROLLBACK")  # nothing was bumped; end the transaction BEGIN opened
            _results(raw)
        if len(found) == n:
            if len(prepared) < n:
                prepared = prepare(0, n)
            return [found[p.event_id] for p in prepared], prepared, False
        raise IdempotencyConflict(
            f"{len(found)} of {n} event ids of this batch are already stored; refusing a partial re-send"
        )
    r_versions, r_head = res.get_value(0, 0), res.get_value(0, 1)
    drawn = int(res.get_value(0, 2) or b"0")
    recorded = datetime.fromisoformat((res.get_value(0, 3) or b"").decode())
    # NULL: every stream was new (its version is now its count)
    new_versions = counts if r_versions is None else dict(orjson.loads(r_versions))
    expected = expected_versions or {}
    next_version: dict[str, int] = {}
    for s in names:
        before = int(new_versions[s]) - counts[s]
        if s in expected and expected[s] != before:
            raise ConcurrencyError(s, expected[s], before)
        next_version[s] = before + 1

    def number(chunk: list[_Prepared]) -> None:
        for p in chunk:
            p.version = next_version[p.stream]
            next_version[p.stream] += 1

    prev = bytes.fromhex(r_head.decode()) if r_head else GENESIS

    if copy:
        if not copy_sent:
            _send(raw, _COPY_SQL)
            _results(raw)  # COPY_IN
        try:
            chunk, head = prepared, COPY_HEADER
            rec = recorded_parts(recorded)
            while True:
                number(chunk)
                out = chain_rows(chunk, parts, prev, rec)
                prev = chunk[-1].hash
                if hi >= n:
                    _copy_write(raw, b"%b%b%b" % (head, out, COPY_TRAILER))
                    break
                _copy_write(raw, head + out if head else out)
                head = b""
                lo, hi = hi, min(hi + CHUNK, n)
                chunk = prepare(lo, hi)
                parts = [copy_parts(p, cache) for p in chunk]
                prepared.extend(chunk)
        except BaseException:
            _abort_copy(raw)
            raise
        raw.wait(generators.copy_end(raw.pgconn, None))  # raises the COPY's error, if any
        # Positions are contiguous: nobody else can draw one while we hold the ledger lock.
        if commit:
            _send(raw, _CURRVAL + b"; COMMIT")
            last = int(_results(raw)[0].get_value(0, 0) or b"0")
        else:
            last = drawn + n
        return list(range(last - n + 1, last + 1)), prepared, True
    with raw.cursor() as cur:
        number(prepared)
        for p in prepared:
            p.prev_hash = prev
            p.hash = event_hash(
                prev,
                stream=p.stream,
                version=p.version,
                type=p.type,
                schema_version=p.schema_version,
                event_id=p.event_id,
                data_bytes=p.data,
                meta_bytes=p.meta,
                effective_at=p.effective_at,
                recorded_at=recorded,
            )
            prev = p.hash
        cur.execute(
            "INSERT INTO events (stream, version, type, schema_version, event_id, data, meta, effective_at, "
            "prev_hash, hash, recorded_at) "
            "SELECT s, v, t, sv, e, d::jsonb, m::jsonb, ea, ph, h, %b::timestamptz FROM unnest("
            "%b::text[], %b::int[], %b::text[], %b::smallint[], %b::uuid[], %b::text[], %b::text[], "
            "%b::timestamptz[], %b::bytea[], %b::bytea[]) "
            "WITH ORDINALITY AS x(s, v, t, sv, e, d, m, ea, ph, h, o) ORDER BY o RETURNING position",
            (
                recorded,
                [p.stream for p in prepared],
                [p.version for p in prepared],
                [p.type for p in prepared],
                [p.schema_version for p in prepared],
                [p.event_id for p in prepared],
                [p.data.decode() for p in prepared],
                [p.meta.decode() for p in prepared],
                [p.effective_at for p in prepared],
                [p.prev_hash for p in prepared],
                [p.hash for p in prepared],
            ),
        )
        positions = sorted(int(r[0]) for r in cur.fetchall())
    if commit:
        raw.execute("COMMIT")
    return positions, prepared, True
