"""The one place the Kubernetes-compatible API calls podledger's own code.

Everything under ``api/k8s`` reaches the ledger (apply, delete, reads, the log, the projection
fold, LISTEN/NOTIFY, tokens) through the functions of this module, so a change of podledger's
service layer is re-pointed here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from api import services
from api.app import context
from api.auth import Principal, bearer_token
from ledger import store, writer
from ledger.errors import ConcurrencyError, IdempotencyConflict, LedgerError
from ledger.listen import Listener
from ledger.projections import current
from ledger.resources.errors import FieldError
from ledger.resources.parse import Document, validate
from ledger.store import NewEvent, StoredEvent

# The transaction-scoped advisory lock every append takes (migrations/sql/serialize_appends.sql).
# A conditional write takes it first, so nothing is appended between its check and its write.
APPEND_LOCK = 7243150001

Row = dict[str, Any]  # a projection row: uid, object, status, created/updated position and time
Key = tuple[str, str, str]  # (kind, namespace, name)

ConflictErrors = (ConcurrencyError, IdempotencyConflict)
__all__ = ["ConflictErrors", "FieldError", "LedgerError"]


# ----------------------------------------------------------------------------------- callers


@dataclass(frozen=True)
class Caller:
    principal: Principal | None  # None: no valid token
    reason: str = ""  # why there is no principal (never contains the token)


def caller(request: Any) -> Caller:
    """Who is calling: the bearer token's role (api.auth tokens of ``podledger serve``)."""
    ctx = context(request)
    if not ctx.tokens:
        if ctx.insecure_local:
            from api.auth import LOCAL

            return Caller(LOCAL)
        return Caller(None, "no tokens are configured on this server")
    token = bearer_token(request.headers.get("authorization"))
    if token is None:
        return Caller(None, "a bearer token is required")
    principal = ctx.tokens.lookup(token)
    if principal is None:
        return Caller(None, "the bearer token is not valid")
    return Caller(principal)


def engine(request: Any) -> Engine:
    return context(request).engine


def libpq_url(eng: Engine) -> str:
    from ledger import db

    return db.libpq_url(eng.url.render_as_string(hide_password=False))


def listener(eng: Engine) -> Listener:
    """A LISTEN connection on the append channel (ledger.listen); ``wait`` returns on NOTIFY."""
    lst = Listener(libpq_url(eng))
    lst.start()
    return lst


# ----------------------------------------------------------------------------------- reads


def _row_from(r: Sequence[Any]) -> Row:
    return {
        "kind": r[0],
        "namespace": r[1],
        "name": r[2],
        "uid": r[3],
        "object": r[4],
        "status": r[5],
        "created_position": r[6],
        "updated_position": r[7],
        "created_at": r[8],
        "updated_at": r[9],
    }


_COLS = (
    "kind, namespace, name, uid, object, status, created_position, updated_position, created_at, updated_at"
)


@contextmanager
def snapshot(eng: Engine) -> Iterator[Connection]:
    """A read-only REPEATABLE READ transaction: the head and the objects read in it agree."""
    with eng.connect().execution_options(isolation_level="REPEATABLE READ") as conn:
        with conn.begin():
            yield conn


def head(conn: Connection) -> int:
    return store.head(conn)


def rows(conn: Connection, kind: str, namespace: str | None = None, name: str | None = None) -> list[Row]:
    """Current objects of a kind from the ``objects`` projection, in (namespace, name) order."""
    q = f"SELECT {_COLS} FROM objects WHERE kind = :k"
    params: dict[str, Any] = {"k": kind}
    if namespace is not None:
        q += " AND namespace = :n"
        params["n"] = namespace
    if name is not None:
        q += " AND name = :m"
        params["m"] = name
    q += " ORDER BY namespace, name"
    return [_row_from(r) for r in conn.execute(sa.text(q), params)]


def row(conn: Connection, kind: str, namespace: str, name: str) -> Row | None:
    found = rows(conn, kind, namespace, name)
    return found[0] if found else None


def namespaces(conn: Connection) -> list[tuple[str, Any]]:
    """Namespaces in use (podledger has no Namespace objects): (name, first seen) pairs."""
    res = conn.execute(
        sa.text("SELECT namespace, min(created_at) FROM objects WHERE namespace <> '' GROUP BY 1 ORDER BY 1")
    )
    return [(r[0], r[1]) for r in res]


def group_pod_counts(conn: Connection) -> dict[tuple[str, str], tuple[int, int]]:
    """(namespace, podGroupName) → (pods, bound pods) over the current pods."""
    res = conn.execute(
        sa.text(
            "SELECT namespace, object->'spec'->'schedulingGroup'->>'podGroupName' AS g, count(*), "
            "count(*) FILTER (WHERE status->>'phase' = 'Bound') FROM objects WHERE kind = 'Pod' "
            "AND object->'spec'->'schedulingGroup'->>'podGroupName' IS NOT NULL GROUP BY 1, 2"
        )
    )
    return {(r[0], r[1]): (int(r[2]), int(r[3])) for r in res}


def read_events(
    conn: Connection, after: int, limit: int, types: Sequence[str] | None = None
) -> list[StoredEvent]:
    """Events after a position (ledger.store.read_all)."""
    return store.read_all(conn, after=after, limit=limit, types=types)


def decision_events(conn: Connection, types: Sequence[str], upto: int) -> list[StoredEvent]:
    """Scheduling decisions of the given types up to a position (for Kubernetes Events)."""
    res = conn.execute(
        sa.text(
            "SELECT position, stream, version, type, schema_version, event_id, data, meta, recorded_at, "
            "effective_at FROM events WHERE type = ANY(:t) AND position <= :u ORDER BY position"
        ),
        {"t": list(types), "u": upto},
    )
    from ledger.events import upcast

    return [StoredEvent(*r[:6], upcast(r[3], r[4], dict(r[6])), r[7], r[8], r[9]) for r in res]  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------- the fold


def touched(ev: StoredEvent) -> list[Key]:
    """The objects an event changes (the inline projection's own rule)."""
    return list(current._touch(ev))


def fold(rows_by_key: dict[Key, Row | None], ev: StoredEvent) -> None:
    """Fold one event into rows keyed (kind, namespace, name), as the ``objects`` projection does."""
    current._apply(rows_by_key, ev, set())  # type: ignore[arg-type]


def state_at(eng: Engine, kind: str, position: int) -> dict[Key, Row]:
    """Every object of ``kind`` as of ``position``, folded from the log."""
    state: dict[Key, Row | None] = {}
    for ev in store.iter_all(eng, upto=position, light=True):
        keys = [k for k in current._touch(ev) if k[0] == kind]
        if keys:
            current._apply(state, ev, set())  # type: ignore[arg-type]
    out: dict[Key, Row] = {}
    for k, v in state.items():
        if v is not None:
            out[k] = {"kind": k[0], "namespace": k[1], "name": k[2], **v}
    return out


# ----------------------------------------------------------------------------------- writes


def validate_manifest(manifest: Mapping[str, Any], source: str) -> tuple[Any, list[FieldError]]:
    """Validate one manifest with podledger's models (ledger.resources.parse.validate)."""
    return validate(Document(1, source, manifest))


class _InTransaction:
    """An Engine stand-in whose ``begin()`` yields our connection, so a service call joins the
    transaction that checked the preconditions."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    @contextmanager
    def begin(self) -> Iterator[Connection]:
        yield self._conn


@contextmanager
def write_transaction(eng: Engine) -> Iterator[Connection]:
    """One transaction holding the append lock: preconditions read in it stay true until commit."""
    with eng.begin() as conn:
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": APPEND_LOCK})
        yield conn


def apply(
    conn: Connection, objects: Sequence[Any], *, actor: str, meta: Mapping[str, Any]
) -> services.ApplyResult:
    """Admit and append objects in ``conn``'s transaction (api.services.apply_objects)."""
    return services.apply_objects(
        _InTransaction(conn),  # type: ignore[arg-type]
        objects,
        actor=actor,
        source="k8s",
        meta=dict(meta),
    )


def delete(conn: Connection, kind: str, namespace: str, name: str, *, actor: str) -> StoredEvent:
    """Append the object's delete event (api.services.delete_objects); LookupError if missing."""
    return services.delete_objects(_InTransaction(conn), [(kind, namespace or None, name)], actor=actor)[0]  # type: ignore[arg-type]


def bind(conn: Connection, pod: Row, node: str, *, actor: str, meta: Mapping[str, Any]) -> StoredEvent:
    """Append a PodBound decision made outside podledger's scheduler (a Binding).

    Its meta has no ``cycle``: replay treats it as an input, not as a decision to recompute.
    """
    ns, name = pod["namespace"], pod["name"]
    group = ((pod["object"].get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")
    data = {
        "pod": f"{ns}/{name}",
        "node": node,
        "group": f"{ns}/{group}" if group else None,
        "requests": None,
    }
    ev = NewEvent(f"sched/pod/{ns}/{name}", "PodBound", data, {"actor": actor, **meta})
    return writer.write(conn, [ev])[0]


def format_resources(resources: Mapping[str, int]) -> dict[str, str]:
    """Exact base units back to Kubernetes quantities (ledger.resources.quantity)."""
    from ledger.resources.quantity import format_resources as fmt

    return fmt(resources)
