"""Statements sent as one simple-query message on the raw psycopg connection.

One message may hold several statements (``BEGIN; SELECT ...; COMMIT``): they cost one round
trip, where psycopg's own ``execute`` sends an implicit ``BEGIN`` with a sync of its own and
adapts every parameter in Python. Arguments are inlined as literals that need no escaping
(``literal``, ``json_arg``, ``text_arg``), so no user text is ever quoted into SQL. Results
come back in text format (``PGresult``).
"""

from __future__ import annotations

from typing import Any

import orjson
import psycopg
from psycopg import generators, pq
from psycopg.errors import error_from_result


def send(raw: psycopg.Connection[Any], sql: bytes) -> None:
    """Send a simple-query message (one or more statements) without waiting for the results."""
    raw.pgconn.send_query(sql)


def results(raw: psycopg.Connection[Any]) -> list[pq.abc.PGresult]:
    """Wait for the results of ``send``; raise the first error as psycopg would."""
    out: list[pq.abc.PGresult] = raw.wait(generators.execute(raw.pgconn))
    for res in out:
        if res.status == pq.ExecStatus.FATAL_ERROR:
            raise error_from_result(res, encoding=raw.info.encoding)
    return out


def run(raw: psycopg.Connection[Any], sql: bytes, *, begin: bool = True) -> list[pq.abc.PGresult]:
    """``send`` + ``results``; with ``begin``, a connection outside a transaction (and not in
    autocommit mode) opens one in the same message, as psycopg would have before the statement."""
    if begin and not raw.autocommit and raw.pgconn.transaction_status == pq.TransactionStatus.IDLE:
        sql = b"BEGIN; " + sql
    send(raw, sql)
    return results(raw)


def literal(text: bytes) -> bytes:
    """A SQL text literal of the UTF-8 ``text``: dollar-quoted with a tag ``text`` does not
    contain (nothing inside needs escaping), else hex-decoded on the server (also for a NUL
    byte, which would end the query string)."""
    if b"\x00" not in text:
        for tag in (b"$j$", b"$j0$", b"$j1$"):
            if tag not in text:
                return b"%b%b%b" % (tag, text, tag)
    return b"convert_from(decode('%b', 'hex'), 'UTF8')" % text.hex().encode()


def json_arg(value: Any) -> bytes:
    """``value`` as a jsonb expression to inline into a statement."""
    return literal(orjson.dumps(value)) + b"::jsonb"


def text_arg(value: str) -> bytes:
    """``value`` as a text expression to inline into a statement."""
    return literal(value.encode())
