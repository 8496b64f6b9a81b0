"""The ``objects`` projection as of a past position, folded privately and rolled back."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from ledger import store
from ledger.projections.current import project


@contextmanager
def objects_at(engine: Engine, position: int) -> Iterator[Connection]:
    """A connection on which ``objects`` is the projection as of ``position`` (rolled back after).

    A temporary table named ``objects`` shadows the real one for this session only (pg_temp is
    searched first), and the same fold that maintains the live projection fills it, so every
    query of ``ledger.queries.objects`` answers as of that position on this connection.
    """
    with engine.connect() as conn:
        trans = conn.begin()
        try:
            conn.execute(
                sa.text("CREATE TEMP TABLE objects (LIKE public.objects INCLUDING ALL) ON COMMIT DROP")
            )
            after = 0
            while after < position:
                batch = store.read_all(conn, after=after, limit=5000)
                batch = [e for e in batch if e.position <= position]
                if not batch:
                    break
                project(conn, batch)
                after = batch[-1].position
            yield conn
        finally:
            trans.rollback()


@contextmanager
def objects_now(engine: Engine) -> Iterator[Connection]:
    """A plain connection on the live projection (the counterpart of ``objects_at``)."""
    with engine.connect() as conn:
        yield conn


__all__ = ["objects_at", "objects_now"]
