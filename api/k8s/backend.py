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

from sqlalchemy.engine import Connection, Engine

from api.http.auth import Principal, bearer_token
from api.http.context import context
from api.services import objects as services
from ledger import store, writer
from ledger.errors import ConcurrencyError, IdempotencyConflict, LedgerError
from ledger.listen import Listener
from ledger.projections import current
from ledger.queries import log as log_queries
from ledger.queries import objects as object_queries
from ledger.resources.errors import FieldError
from ledger.resources.parse import Document, validate
from ledger.store import NewEvent, StoredEvent

Row = dict[str, Any]  # a projection row: uid, object, status, created/updated position and time
Key = tuple[str, str, str]  # (kind, namespace, name)

ConflictErrors = (ConcurrencyError, IdempotencyConflict)
__all__ = ["ConflictErrors", "FieldError", "LedgerError"]


# ----------------------------------------------------------------------------------- callers


@dataclass(frozen=True)
class Caller:
    principal: Principal | None  # None: no valid token
    reason: str = ""  # why there is no principal (never contains the token)
    retry_after: int | None = None  # set when the address is throttled (too many wrong tokens)


def caller(request: Any) -> Caller:
    """Who is calling: the bearer token's role (the tokens of ``podledger serve``, api.http.auth)."""
    ctx = context(request)
    if not ctx.tokens:
        if ctx.insecure_local:
            from api.http.auth import LOCAL

            return Caller(LOCAL)
        return Caller(None, "no tokens are configured on this server")
    token = bearer_token(request.headers.get("authorization"))
    if token is None:
        return Caller(None, "a bearer token is required")
    address = request.client.host if request.client else "-"
    wait = ctx.throttle.retry_after(address)
    if wait is not None:
        return Caller(None, f"too many failed token attempts from this address; retry in {wait} s", wait)
    principal = ctx.tokens.lookup(token)
    if principal is None:
        ctx.throttle.failed(address)
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
    return object_queries.projection_rows(conn, kind, namespace, name)


def row(conn: Connection, kind: str, namespace: str, name: str) -> Row | None:
    found = rows(conn, kind, namespace, name)
    return found[0] if found else None


def namespaces(conn: Connection) -> list[tuple[str, Any]]:
    """Namespaces in use (podledger has no Namespace objects): (name, first seen) pairs."""
    return object_queries.namespaces_in_use(conn)


def group_pod_counts(conn: Connection) -> dict[tuple[str, str], tuple[int, int]]:
    """(namespace, podGroupName) → (pods, bound pods) over the current pods."""
    return object_queries.group_pod_counts(conn)


def read_events(
    conn: Connection, after: int, limit: int, types: Sequence[str] | None = None
) -> list[StoredEvent]:
    """Events after a position (ledger.store.read_all)."""
    return store.read_all(conn, after=after, limit=limit, types=types)


def decision_events(conn: Connection, types: Sequence[str], upto: int) -> list[StoredEvent]:
    """Scheduling decisions of the given types up to a position (for Kubernetes Events)."""
    return log_queries.events_of_types(conn, types, upto)


# ----------------------------------------------------------------------------------- the fold


def touched(ev: StoredEvent) -> list[Key]:
    """The objects an event changes (the inline projection's own rule)."""
    return current.touched_keys(ev)


def fold(rows_by_key: dict[Key, Row | None], ev: StoredEvent) -> None:
    """Fold one event into rows keyed (kind, namespace, name), as the ``objects`` projection does."""
    current.fold_into(rows_by_key, ev)  # type: ignore[arg-type]


def state_at(eng: Engine, kind: str, position: int) -> dict[Key, Row]:
    """Every object of ``kind`` as of ``position``, folded from the log."""
    state: dict[Key, Row | None] = {}
    for ev in store.iter_all(eng, upto=position, light=True):
        if any(k[0] == kind for k in current.touched_keys(ev)):
            current.fold_into(state, ev)  # type: ignore[arg-type]
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
        store.lock_appends(conn)
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


def record_conditions(
    conn: Connection,
    kind: str,
    namespace: str,
    name: str,
    conditions: Sequence[Mapping[str, str]],
    *,
    actor: str,
    meta: Mapping[str, Any],
) -> list[StoredEvent]:
    """Append one ``<Kind>ConditionChanged`` per condition a client wrote through the status
    subresource of a PodGroup or CompositePodGroup: observed (``meta.observed``), no ``cycle``
    (replay folds it as an input), on the stream of podledger's own condition decisions."""
    prefix = "compositepodgroup" if kind == "CompositePodGroup" else "podgroup"
    events = [
        NewEvent(
            f"sched/{prefix}/{namespace}/{name}",
            f"{kind}ConditionChanged",
            {"group": f"{namespace}/{name}", **{k: c[k] for k in ("type", "status", "reason", "message")}},
            {"actor": actor, "observed": True, **meta},
        )
        for c in conditions
    ]
    return writer.write(conn, events)


def qualified_name_problem(value: str) -> str | None:
    """Why ``value`` is not a Kubernetes qualified name (a condition type), or None."""
    from ledger.resources.models.values import qualified_name_problem as problem

    return problem(value)


def format_resources(resources: Mapping[str, int]) -> dict[str, str]:
    """Exact base units back to Kubernetes quantities (ledger.resources.quantity)."""
    from ledger.resources.quantity import format_resources as fmt

    return fmt(resources)


def blocking_budget(conn: Connection, pod: Row) -> tuple[str, int, int] | None:
    """The first PodDisruptionBudget (by name) that evicting ``pod`` would violate, as (name,
    healthy pods it needs, healthy pods it has), or None. Budgets are counted as the scheduler's
    preemption counts them (scheduler/preemption/pdb.py): a bound pod is healthy; a pod that is
    not bound does not use up the budget."""
    from types import SimpleNamespace

    from scheduler.preemption.pdb import Budgets
    from scheduler.translate import pdb_from, pod_from

    if not (pod["status"] or {}).get("nodeName"):
        return None
    ns = pod["namespace"]
    pdbs = [pdb_from(r["object"]) for r in rows(conn, "PodDisruptionBudget", ns)]
    if not pdbs:
        return None
    state = SimpleNamespace(pods={}, pdbs={})  # what Budgets reads of the scheduler's State
    for i, r in enumerate(rows(conn, "Pod", ns)):
        p = pod_from(r["object"], i, 0.0, r["status"])
        state.pods[p.key] = p
    for pdb in pdbs:
        state.pdbs[pdb.key] = pdb
    target = pod_from(pod["object"], 0, 0.0, pod["status"])
    for pdb, allowed in Budgets(state).pdbs:  # type: ignore[arg-type]
        if pdb.matches(target) and allowed < 1:
            matching = [p for p in state.pods.values() if pdb.matches(p)]
            healthy = sum(1 for p in matching if p.node_name is not None)
            return pdb.name, healthy - allowed, healthy
    return None
