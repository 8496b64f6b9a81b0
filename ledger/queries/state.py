"""The ``objects`` projection as of a past position (the temporal projection, rolled back after)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.engine import Connection, Engine

from ledger.projections.temporal import shadow_objects


@contextmanager
def objects_at(engine: Engine, position: int) -> Iterator[Connection]:
    """A connection on which ``objects`` is the projection as of ``position`` (rolled back after).

    A temporary view named ``objects`` over the temporal projection (``object_versions``)
    shadows the real table for this session only (pg_temp is searched first): no fold, whatever
    the position, and every query of ``ledger.queries.objects`` answers as of that position on
    this connection.
    """
    with engine.connect() as conn:
        trans = conn.begin()
        try:
            shadow_objects(conn, position)
            yield conn
        finally:
            trans.rollback()


@contextmanager
def objects_now(engine: Engine) -> Iterator[Connection]:
    """A plain connection on the live projection (the counterpart of ``objects_at``)."""
    with engine.connect() as conn:
        yield conn


__all__ = ["objects_at", "objects_now"]
