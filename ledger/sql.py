"""Typed shorthands over psycopg for read queries (psycopg 3 is podledger's one driver).

``Query`` is what psycopg accepts as a statement; parameters are psycopg's (``%s`` or
``%(name)s``; a literal ``%`` is written ``%%`` when parameters are given).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, LiteralString, TypeAlias

import psycopg
from psycopg import sql as _sql
from psycopg.rows import dict_row, namedtuple_row

Conn: TypeAlias = psycopg.Connection[Any]
Query: TypeAlias = LiteralString | bytes | _sql.SQL | _sql.Composed
Params: TypeAlias = Sequence[Any] | Mapping[str, Any] | None


def scalar(conn: Conn, query: Query, params: Params = None) -> Any:
    """The first column of the first row (None when there is no row)."""
    row = conn.execute(query, params).fetchone()
    return None if row is None else row[0]


def rows(conn: Conn, query: Query, params: Params = None) -> list[Any]:
    """Every row as a named tuple (by index or by column name)."""
    with conn.cursor(row_factory=namedtuple_row) as cur:
        return cur.execute(query, params).fetchall()


def dicts(conn: Conn, query: Query, params: Params = None) -> list[dict[str, Any]]:
    """Every row as a dict keyed by column name."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(query, params).fetchall()
