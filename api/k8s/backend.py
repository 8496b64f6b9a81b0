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

from api.http.auth import Principal, bearer_token
from api.http.context import context
from api.services.commands import bindings, conditions, evictions
from api.services.commands import objects as commands
from ledger import store
from ledger.database import Database
from ledger.errors import ConcurrencyError, EventValidationError, IdempotencyConflict, LedgerError
from ledger.listen import Listener
from ledger.projections import current
from ledger.queries import log as log_queries
from ledger.queries import objects as object_queries
from ledger.resources.errors import FieldError
from ledger.resources.parse import Document, validate
from ledger.sql import Conn
from ledger.store import StoredEvent
from ledger.uow import UnitOfWork

Row = dict[str, Any]  # a projection row: uid, object, status, created/updated position and time
Key = tuple[str, str, str]  # (kind, namespace, name)

ConflictErrors = (ConcurrencyError, IdempotencyConflict)
EventTooLarge = EventValidationError  # a payload over the log's 1 MiB limit
BudgetViolated = evictions.BudgetViolated
__all__ = ["BudgetViolated", "ConflictErrors", "FieldError", "LedgerError"]


# ----------------------------------------------------------------------------------- callers


@dataclass(frozen=True)
class Caller:
    principal: Principal | None  # None: no valid token
    reason: str = ""  # why there is no principal (never contains the token)
    retry_after: int | None = None  # set when the address is throttled (too many wrong tokens)


def caller(request: Any) -> Caller:
    """Who is calling: the bearer token's role (the tokens of ``podledger serve``, api.http.auth)."""
    outcome = context(request).authenticate(request, bearer_token(request.headers.get("authorization")))
    return Caller(outcome.principal, outcome.reason, outcome.retry_after)  # api.http.auth.check_token


def database(request: Any) -> Database:
    return context(request).db


def read_database(request: Any) -> Database:
    """The database a GET (list, get, watch) is served by: a standby when one is configured and
    has replayed the request's ``X-Podledger-Min-LSN`` (``ledger.replica.route``)."""
    return context(request).read_db


def listener(db: Database) -> Listener:
    """A LISTEN connection on the append channel (ledger.listen); ``wait`` returns on NOTIFY."""
    lst = Listener(db.login_url)
    lst.start()
    return lst


# ----------------------------------------------------------------------------------- reads


@contextmanager
def snapshot(db: Database) -> Iterator[Conn]:
    """A read-only REPEATABLE READ transaction: the head and the objects read in it agree."""
    with db.snapshot() as conn:
        yield conn


def head(conn: Conn) -> int:
    return store.head(conn)


def rows(conn: Conn, kind: str, namespace: str | None = None, name: str | None = None) -> list[Row]:
    """Current objects of a kind from the ``objects`` projection, in (namespace, name) order."""
    return object_queries.projection_rows(conn, kind, namespace, name)


def row(conn: Conn, kind: str, namespace: str, name: str) -> Row | None:
    found = rows(conn, kind, namespace, name)
    return found[0] if found else None


def stream_events(conn: Conn, kind: str, namespace: str, name: str) -> list[StoredEvent]:
    """The events of one object's stream, in version order."""
    from ledger import streams

    return store.read_stream(conn, streams.object_stream(kind, namespace or None, name))


def namespaces(conn: Conn) -> list[tuple[str, Any]]:
    """Namespaces in use (podledger has no Namespace objects): (name, first seen) pairs."""
    return object_queries.namespaces_in_use(conn)


def group_pod_counts(conn: Conn) -> dict[tuple[str, str], tuple[int, int]]:
    """(namespace, podGroupName) → (pods, bound pods) over the current pods."""
    return object_queries.group_pod_counts(conn)


def read_events(conn: Conn, after: int, limit: int, types: Sequence[str] | None = None) -> list[StoredEvent]:
    """Events after a position (ledger.store.read_all)."""
    return store.read_all(conn, after=after, limit=limit, types=types)


def decision_events(conn: Conn, types: Sequence[str], upto: int) -> list[StoredEvent]:
    """Scheduling decisions of the given types up to a position (for Kubernetes Events)."""
    return log_queries.events_of_types(conn, types, upto)


# ----------------------------------------------------------------------------------- the fold


def touched(ev: StoredEvent) -> list[Key]:
    """The objects an event changes (the inline projection's own rule)."""
    return current.touched_keys(ev)


def fold(rows_by_key: dict[Key, Row | None], ev: StoredEvent) -> None:
    """Fold one event into rows keyed (kind, namespace, name), as the ``objects`` projection does."""
    current.fold_into(rows_by_key, ev)


def state_at(db: Database, kind: str, position: int) -> dict[Key, Row]:
    """Every object of ``kind`` as of ``position``, folded from the log."""
    state: dict[Key, Row | None] = {}
    for ev in store.iter_all(db, upto=position, light=True):
        if any(k[0] == kind for k in current.touched_keys(ev)):
            current.fold_into(state, ev)
    out: dict[Key, Row] = {}
    for k, v in state.items():
        if v is not None:
            out[k] = {"kind": k[0], "namespace": k[1], "name": k[2], **v}
    return out


# ----------------------------------------------------------------------------------- writes


def validate_manifest(manifest: Mapping[str, Any], source: str) -> tuple[Any, list[FieldError]]:
    """Validate one manifest with podledger's models (ledger.resources.parse.validate)."""
    return validate(Document(1, source, manifest))


@contextmanager
def write_unit(db: Database, *, dry_run: bool = False) -> Iterator[UnitOfWork]:
    """One unit of work holding the append lock: preconditions read in it stay true until the
    commit (which the caller makes). A dry run is rolled back at the end of the block."""
    with db.unit_of_work(dry_run=dry_run) as uow:
        uow.lock_appends()
        yield uow


def apply(
    uow: UnitOfWork, objects: Sequence[Any], *, actor: str, meta: Mapping[str, Any]
) -> commands.ApplyResult:
    """Admit and append objects in ``uow`` (the apply command)."""
    return commands.apply_objects(uow, objects, actor=actor, source="k8s", meta=dict(meta))


def delete(uow: UnitOfWork, kind: str, namespace: str, name: str, *, actor: str) -> StoredEvent:
    """Append the object's delete event (the delete command); LookupError if missing."""
    return commands.delete_object(uow, kind, namespace or None, name, actor=actor)


def bind(uow: UnitOfWork, pod: Row, node: str, *, actor: str, meta: Mapping[str, Any]) -> StoredEvent:
    """Append a PodBound decision made outside podledger's scheduler (a Binding): replay
    treats it as an input, not as a decision to recompute."""
    return bindings.bind(uow, pod, node, actor=actor, meta=meta)


def record_conditions(
    uow: UnitOfWork,
    kind: str,
    namespace: str,
    name: str,
    changes: Sequence[Mapping[str, str]],
    *,
    actor: str,
    meta: Mapping[str, Any],
) -> list[StoredEvent]:
    """Conditions a client wrote through the status subresource of a PodGroup or
    CompositePodGroup, as observed inputs (the conditions command)."""
    return conditions.record_conditions(uow, kind, namespace, name, changes, actor=actor, meta=meta)


def evict(uow: UnitOfWork, namespace: str, name: str, *, actor: str) -> StoredEvent:
    """The eviction command: the pod deleted unless a PodDisruptionBudget forbids it
    (BudgetViolated, nothing appended); LookupError if the pod is missing."""
    return evictions.evict(uow, namespace, name, actor=actor)


def qualified_name_problem(value: str) -> str | None:
    """Why ``value`` is not a Kubernetes qualified name (a condition type), or None."""
    from ledger.resources.models.values import qualified_name_problem as problem

    return problem(value)


def format_resources(resources: Mapping[str, int]) -> dict[str, str]:
    """Exact base units back to Kubernetes quantities (ledger.resources.quantity)."""
    from ledger.resources.quantity import format_resources as fmt

    return fmt(resources)
