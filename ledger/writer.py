"""One request, one transaction: append events and update the inline projection together.

Group commit (``grouped``): several consecutive requests, and the scheduling decisions they
cause, may share one transaction. The appends then go to the log at once (positions are drawn
under the ledger lock, so they are final), while the inline projection of the whole group is
written once, before anything reads the projection rows the group changed (``settle``) and at
the latest right before the commit. Nothing is visible to other sessions before the commit, and
the commit is the only acknowledgement of every request of the group.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager

from sqlalchemy.engine import Connection, Engine

from ledger.projections.current import project, touched_keys
from ledger.store import NewEvent, StoredEvent, append_stored

_DEFERRED = "podledger.deferred_projection"  # Connection.info key: the group's unprojected events

Key = tuple[str, str, str]


def write(
    target: Engine | Connection,
    events: Sequence[NewEvent],
    expected_versions: Mapping[str, int] | None = None,
) -> list[StoredEvent]:
    """Append ``events`` and fold them into ``objects`` atomically; returns the stored events.

    An idempotent re-send (every event id already stored) returns the original positions and
    changes nothing. Inside ``grouped`` the projection is deferred to the group's ``settle``.
    """
    if isinstance(target, Engine):
        with target.begin() as conn:
            return _write(conn, events, expected_versions, own=True)
    return _write(target, events, expected_versions, own=False)


def _write(
    conn: Connection, events: Sequence[NewEvent], expected_versions: Mapping[str, int] | None, *, own: bool
) -> list[StoredEvent]:
    """``own``: the transaction is this call's (an Engine target): the COMMIT then rides at the
    end of the projection's write pipeline (one round trip less; an error there still raises
    before anything is returned, and the ``begin`` block's own commit finds nothing to do)."""
    stored, new = append_stored(conn, events, expected_versions)
    if new:
        pending: list[StoredEvent] | None = conn.info.get(_DEFERRED)
        if pending is None:
            project(conn, stored, commit=own)
        else:
            pending.extend(stored)
    return stored


@contextmanager
def grouped(conn: Connection, *, commit: bool = False) -> Iterator[Connection]:
    """Defer the inline projection of every ``write`` on ``conn`` until ``settle`` (or the end
    of the block); the caller owns the transaction and commits after the block.

    ``commit``: the block's end is the end of the transaction: the group's COMMIT is sent as the
    last statement of the projection's write pipeline (one round trip less per group; an error
    there raises out of the block, and the caller's own commit then finds nothing to do)."""
    if _DEFERRED in conn.info:
        yield conn  # already grouped: the outer block settles
        return
    conn.info[_DEFERRED] = []
    try:
        yield conn
        settle(conn, commit=commit)
    finally:
        conn.info.pop(_DEFERRED, None)


def settle(
    conn: Connection, keys: Iterable[Key] | None = None, kinds: Iterable[str] = (), *, commit: bool = False
) -> None:
    """Write the deferred projection of ``conn``'s group now: always when ``keys`` is None,
    otherwise only if a deferred event touches one of ``keys`` or an object of ``kinds`` (what
    a reader of the projection is about to read). ``commit`` (with ``keys`` None): COMMIT rides
    at the end of the projection's writes, when there are any."""
    pending: list[StoredEvent] | None = conn.info.get(_DEFERRED)
    if not pending:
        return
    if keys is not None:
        wanted = set(keys)
        kind_set = set(kinds)
        touched = {k for ev in pending for k in touched_keys(ev)}
        if not (touched & wanted) and not any(k[0] in kind_set for k in touched):
            return
    batch = list(pending)
    pending.clear()
    project(conn, batch, commit=commit and keys is None)
