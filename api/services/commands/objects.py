"""Apply and delete objects: the commands behind ``podledger apply/delete``, the JSON API's writes
and the Kubernetes API's create, update, patch and delete.

One request is one unit of work (``ledger.uow``): the current state is read in it, admission
runs (pure), and the resulting events are appended with the stream versions the state was read
at, so a concurrent change of the same object raises a conflict instead of being overwritten.
``apply_objects`` / ``delete_objects`` append into the caller's unit of work and leave the
commit to it; ``apply_manifests`` / ``delete_one`` are whole requests (parse, validate, an
``Idempotency-Key``: a retried request appends nothing and answers with the original events,
``replayed=True``; an expected stream version, ``If-Match``) and commit the unit they are given.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from api.services.errors import BadRequest, Conflict, Invalid, NotFound, Rejected
from api.services.objects import kind_info
from ledger import streams
from ledger.errors import ConcurrencyError, IdempotencyConflict
from ledger.events import input_event_type
from ledger.queries import log as log_q
from ledger.queries import objects as objects_q
from ledger.resources.admission import AdmissionOutcome, admit
from ledger.resources.errors import DocumentParseError, FieldError
from ledger.resources.job import expand_jobs
from ledger.resources.kinds import KindInfo, get_kind, resolve_kind
from ledger.resources.models import Resource
from ledger.resources.parse import parse_documents, validate
from ledger.store import NewEvent, StoredEvent
from ledger.uow import UnitOfWork

UID_NAMESPACE = uuid.UUID("6f0c4b36-6a44-4b8e-9a51-7d1f3c2e9a10")

__all__ = [
    "Applied",
    "ApplyResult",
    "EventRef",
    "apply_manifests",
    "apply_objects",
    "delete_object",
    "delete_objects",
    "delete_one",
    "event_ref",
    "rejection",
    "request_digest",
    "request_event_id",
    "scoped_key",
]


class _DbState:
    """AdmissionState over the ``objects`` projection, read inside the request's unit of work.

    One statement reads, for every object of the request, its stored object and its stream's
    version (so the versions the append expects were read together with the state admission
    judged), plus every PriorityClass (a small kind that admission of pods and groups needs).
    """

    PRELOADED = "PriorityClass"

    def __init__(self, uow: UnitOfWork, keys: Iterable[tuple[str, str, str]]) -> None:
        self.uow = uow
        self._cache: dict[tuple[str, str, str], Mapping[str, Any] | None] = {}
        self._lists: dict[str, list[Mapping[str, Any]]] = {}
        self.versions: dict[str, int] = {}  # stream -> version (0 = none) of each requested object
        keys = list(keys)
        # In a group commit the projection of earlier requests of the group is written first if
        # it changes what this request reads.
        uow.settle(keys, (self.PRELOADED,))
        names = [streams.object_stream(k, n or None, m) for k, n, m in keys]
        preloaded: list[tuple[str, str, Mapping[str, Any]]] = []
        for kind, ns, name, obj, stream, version in objects_q.manifests_with_versions(
            uow.conn, keys, names, self.PRELOADED
        ):
            if stream is None:
                assert obj is not None
                preloaded.append((ns, name, obj))
                self._cache[(kind, ns, name)] = obj
            else:
                self._cache.setdefault((kind, ns, name), obj)
                self.versions[stream] = int(version or 0)
        self._lists[self.PRELOADED] = [obj for _ns, _name, obj in sorted(preloaded, key=lambda r: r[:2])]

    def get(self, kind: str, namespace: str | None, name: str) -> Mapping[str, Any] | None:
        key = (kind, namespace or "", name)
        if key not in self._cache:
            if kind == self.PRELOADED:
                return None  # every object of that kind was read up front
            self.uow.settle()
            self._cache[key] = objects_q.manifest(self.uow.conn, *key)
        return self._cache[key]

    def list(self, kind: str) -> list[Mapping[str, Any]]:
        if kind not in self._lists:
            self.uow.settle()
            self._lists[kind] = list(objects_q.manifests(self.uow.conn, kind))
        return self._lists[kind]


@dataclass
class ApplyResult:
    lines: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    events: list[StoredEvent] = field(default_factory=list)
    rejected: bool = False

    @property
    def ok(self) -> bool:
        return not self.errors


def request_event_id(idempotency_key: str, part: int | str) -> uuid.UUID:
    """The event id of one event of a keyed request (a retried request maps to the same ids)."""
    return uuid.uuid5(UID_NAMESPACE, f"{idempotency_key}:{part}")


def _fill_uid(normalized: dict[str, Any], kind: str, ns: str | None, name: str, version: int) -> None:
    meta = normalized.setdefault("metadata", {})
    if not meta.get("uid"):
        # Deterministic: the same request on the same log gives the same uid (replays and
        # simulations are byte-for-byte reproducible); a re-created object gets a new one.
        meta["uid"] = str(uuid.uuid5(UID_NAMESPACE, f"{streams.object_stream(kind, ns, name)}#{version + 1}"))


def apply_objects(
    uow: UnitOfWork,
    objects: Sequence[Resource],
    *,
    actor: str = "cli",
    source: str = "",
    effective_at: datetime | None = None,
    meta: Mapping[str, Any] | None = None,
    idempotency_key: str | None = None,
    expand: bool = True,
) -> ApplyResult:
    """Admit ``objects`` and append their events in ``uow`` (the caller commits). A refused
    request appends exactly one ``AdmissionRejected`` event and changes no state.
    ``expand=False``: a Job or JobSet is recorded alone, not compiled into what its controller
    creates (``attach``: a cluster's own controllers created those, and they are mirrored)."""
    result = ApplyResult()
    if not objects:
        return result
    base_meta = {"actor": actor, **(meta or {})}
    # a Job brings its Workload, PodGroup and pods
    objects, compiled = expand_jobs(objects) if expand else (list(objects), {})
    keys = [(o.KIND, o.metadata.namespace or "", o.name) for o in objects]
    state = _DbState(uow, keys)
    outcome: AdmissionOutcome = admit(objects, state)
    if outcome.refused:
        record = outcome.rejection_record()
        data = {"actor": actor, "source": source, **record}
        eid = request_event_id(idempotency_key, "rejected") if idempotency_key else None
        result.events = uow.append(
            [NewEvent(streams.REJECTIONS, "AdmissionRejected", data, base_meta, eid, effective_at)]
        )
        result.errors = [str(r) for r in outcome.rejected]
        result.rejected = True
        return result
    names = sorted({streams.object_stream(r.kind, r.namespace, r.name) for r in outcome.changes})
    # every changed object was one of the request's keys: _DbState read its stream's version
    versions = {s: state.versions[s] for s in names}
    pending = dict(versions)
    new_events: list[NewEvent] = []
    for i, r in enumerate(outcome.changes):
        assert r.normalized is not None
        stream = streams.object_stream(r.kind, r.namespace, r.name)
        _fill_uid(r.normalized, r.kind, r.namespace, r.name, pending[stream])
        if r.previous is not None and r.previous.get("metadata", {}).get("uid"):
            r.normalized["metadata"]["uid"] = r.previous["metadata"]["uid"]
        action = "Created" if r.action == "created" else "Updated"
        eid = request_event_id(idempotency_key, i) if idempotency_key else None
        by = compiled.get((r.kind, r.namespace or "", r.name))  # a Job's or JobSet's controller
        new_events.append(
            NewEvent(
                stream,
                input_event_type(r.kind, action),
                {"object": r.normalized},
                {**base_meta, **by} if by else base_meta,
                eid,
                effective_at,
            )
        )
        pending[stream] += 1
    if new_events:
        result.events = uow.append(new_events, versions)
    result.lines = outcome.lines()
    return result


def delete_object(
    uow: UnitOfWork,
    kind: str,
    namespace: str | None,
    name: str,
    *,
    actor: str = "cli",
    effective_at: datetime | None = None,
    idempotency_key: str | None = None,
    meta: Mapping[str, Any] | None = None,
) -> StoredEvent:
    """Delete one object; raises NotFound (a LookupError; appending nothing) if it does not exist."""
    return delete_objects(
        uow,
        [(kind, namespace, name)],
        actor=actor,
        effective_at=effective_at,
        idempotency_key=idempotency_key,
        meta=meta,
    )[0]


def delete_objects(
    uow: UnitOfWork,
    refs: Sequence[tuple[str, str | None, str]],
    *,
    actor: str = "cli",
    effective_at: datetime | None = None,
    idempotency_key: str | None = None,
    meta: Mapping[str, Any] | None = None,
) -> list[StoredEvent]:
    """Delete several objects ``(kind, namespace, name)`` with one append in ``uow``.

    If any object is missing, raises NotFound (a LookupError) and deletes nothing. Event ids
    derive from ``idempotency_key`` and the index in ``refs``.
    """
    if not refs:
        return []
    refs = _with_dependents(uow, refs)
    keys: list[tuple[str, str, str]] = []
    for kind, namespace, name in refs:
        info = get_kind(kind)
        keys.append((info.kind, (namespace or "default") if info.namespaced else "", name))
    if len(set(keys)) != len(keys):
        raise ValueError("the same object is named twice in one delete request")
    names = [streams.object_stream(k, n or None, m) for k, n, m in keys]
    state = _DbState(uow, keys)  # one statement: the objects and their streams' versions
    for key in keys:
        if state.get(*key) is None:
            where = f"{key[1]}/{key[2]}" if key[1] else key[2]
            raise NotFound(f'{key[0]} "{where}" not found')
    events = [
        NewEvent(
            stream,
            input_event_type(kind, "Deleted"),
            {"kind": kind, "namespace": ns, "name": name},
            {"actor": actor, **(meta or {})},
            request_event_id(idempotency_key, i) if idempotency_key else None,
            effective_at,
        )
        for i, ((kind, ns, name), stream) in enumerate(zip(keys, names, strict=True))
    ]
    return uow.append(events, {s: state.versions[s] for s in names})


def _with_dependents(
    uow: UnitOfWork, refs: Sequence[tuple[str, str | None, str]]
) -> list[tuple[str, str | None, str]]:
    """``refs`` and what the garbage collector deletes with them (kubectl's default background
    propagation): what a Job or a JobSet controls, and what those Jobs control."""
    out, named = list(refs), {(resolve_kind(k).kind, ns or "default", n) for k, ns, n in refs}
    owners = sorted(r for r in named if r[0] in ("Job", "JobSet"))
    while owners:
        owner_kind, ns, name = owners.pop(0)
        for kind, child in objects_q.controlled_by(uow.conn, ns, owner_kind, name):
            if (kind, ns, child) not in named:
                named.add((kind, ns, child))
                out.append((kind, ns, child))
                owners += [(kind, ns, child)] if kind == "Job" else []
    return out


# ------------------------------------------------------------------- requests with conditions


class EventRef(NamedTuple):
    position: int
    stream: str
    version: int
    type: str


def event_ref(ev: StoredEvent) -> EventRef:
    return EventRef(ev.position, ev.stream, ev.version, ev.type)


@dataclass
class Applied:
    """What an apply request did: (object, action) per object, and the events appended (or,
    with ``replayed``, appended by an earlier request with the same idempotency key)."""

    results: list[tuple[str, str]]
    events: list[EventRef]
    replayed: bool = False


def scoped_key(key: str, scope: str) -> str:
    """The key that event ids derive from: a key is private to its scope (the token), so two
    callers choosing the same key never see each other's requests."""
    return f"{scope}\x1f{key}" if scope else key


def request_digest(*parts: str) -> str:
    """What identifies a keyed request's content: a retry must send the same."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8", "surrogateescape"))
        h.update(b"\x00")
    return h.hexdigest()


def _key_reused(key: str) -> Invalid:
    return Invalid(
        f"Idempotency-Key {key!r} was used before with a different request; use a new key",
        details=[{"field": "Idempotency-Key", "message": "reused with a different request body"}],
    )


def _check_version(uow: UnitOfWork, stream: str, expected: int | None) -> None:
    """With ``expected`` (If-Match) the stream row is locked and checked first, in the same
    transaction as the write: a concurrent writer waits for us or makes us fail with a
    conflict, never slips in between."""
    if expected is None:
        return
    actual = objects_q.lock_stream_version(uow.conn, stream)
    if actual != expected:
        raise ConcurrencyError(stream, expected, actual)


def rejection(data: Mapping[str, Any], position: int, *, dry_run: bool = False) -> Rejected:
    """The Rejected error of an AdmissionRejected event, one detail per refused field."""
    details = []
    for rej in data.get("rejected") or []:
        reasons = rej.get("reasons") or [{"field": "", "message": rej.get("message", "")}]
        for reason in reasons:
            details.append(
                {
                    "kind": rej.get("kind", ""),
                    "namespace": rej.get("namespace"),
                    "name": rej.get("name", ""),
                    "field": reason.get("field", ""),
                    "message": reason.get("message", ""),
                }
            )
    n = len(data.get("rejected") or [])
    recorded = (
        "a dry run: nothing recorded" if dry_run else f"recorded as AdmissionRejected at position {position}"
    )
    return Rejected(
        f"admission refused {n} object(s): nothing applied ({recorded})",
        details=details,
        position=position,
    )


def _split_line(line: str) -> tuple[str, str]:
    obj, _, action = line.rpartition(" ")
    return (obj, action) if obj else (line, "")


def _earlier_apply(uow: UnitOfWork, key: str, n_objects: int, digest: str, shown: str) -> Applied | None:
    """The events a previous request with this idempotency key appended, if any. Raises Invalid
    when that request had a different body."""
    ids = [request_event_id(key, i) for i in range(n_objects)]
    ids.append(request_event_id(key, "rejected"))
    rows = log_q.events_by_ids(uow.conn, ids)
    if not rows:
        return None
    earlier_digest = (rows[0].meta or {}).get("request_digest")
    if earlier_digest is not None and earlier_digest != digest:
        raise _key_reused(shown)
    if rows[0].type == "AdmissionRejected":
        raise rejection(rows[0].data, rows[0].position)
    results = []
    for r in rows:
        kind_name, _, rest = r.stream.partition("/")
        name = rest.rpartition("/")[2]
        results.append(
            (kind_info(kind_name).display(name), "created" if r.type.endswith("Created") else "updated")
        )
    return Applied(results, [EventRef(r.position, r.stream, r.version, r.type) for r in rows], replayed=True)


def field_problems(errors: Sequence[FieldError]) -> list[dict[str, Any]]:
    """Field errors as the ``details`` of an Invalid error."""
    return [
        {
            "kind": e.kind,
            "namespace": e.namespace,
            "name": e.name,
            "field": e.field,
            "message": e.message,
            "document": e.index,
            "item": e.item,
        }
        for e in errors
    ]


def parse_request(text: str) -> list[Resource]:
    """The objects of a request body (YAML or JSON), validated; Invalid naming every problem."""
    try:
        docs = parse_documents(text, "request body")
    except DocumentParseError as exc:
        raise Invalid(
            f"the request body could not be parsed: {exc.problem}",
            details=[{"field": "", "message": exc.problem, "document": exc.index, "line": exc.line}],
        ) from None
    objects = []
    errors: list[FieldError] = []
    for doc in docs:
        obj, errs = validate(doc)
        if obj is not None and not errs:
            objects.append(obj)
        errors.extend(errs)
    if errors:
        raise Invalid(f"{len(errors)} invalid field(s): nothing applied", details=field_problems(errors))
    if not objects:
        raise Invalid("the request body holds no objects")
    return objects


def apply_manifests(
    uow: UnitOfWork,
    text: str,
    *,
    actor: str,
    source: str,
    meta: Mapping[str, Any] | None = None,
    idempotency_key: str | None = None,
    idempotency_scope: str = "",
    expected_version: int | None = None,
    timed: Callable[[], AbstractContextManager[Any]] = nullcontext,
) -> Applied:
    """Parse, validate and apply the manifests in ``text`` (YAML or JSON) as the request of
    ``uow``, and commit it.

    Raises Invalid (parse or field errors: nothing appended), Rejected (admission refused: one
    AdmissionRejected appended and committed), Conflict (``expected_version`` is not the stream
    version of the single object, or a concurrent write won) or BadRequest. ``timed`` wraps the
    admission and append only (for a latency metric), not parsing or an idempotent replay.

    ``idempotency_key`` is private to ``idempotency_scope`` (the caller's token). A concurrent
    request with the same key waits for the first and returns its result; the same key with a
    different body raises Invalid naming the key.
    """
    objects = parse_request(text)
    key = scoped_key(idempotency_key, idempotency_scope) if idempotency_key is not None else None
    if key is not None:
        meta = {**(meta or {}), "request_digest": request_digest("apply", text)}
    stream = ""
    if expected_version is not None:
        if len(objects) != 1:
            raise BadRequest("If-Match needs a request with exactly one object")
        o = objects[0]
        ns = o.metadata.namespace or ("default" if kind_info(o.KIND).namespaced else None)
        stream = streams.object_stream(o.KIND, ns, o.name)
    try:
        if key is not None:
            assert meta is not None and idempotency_key is not None
            uow.lock_key(key)
            earlier = _earlier_apply(uow, key, len(objects), meta["request_digest"], idempotency_key)
            if earlier is not None:
                return earlier
        with timed():
            _check_version(uow, stream, expected_version)
            result = apply_objects(uow, objects, actor=actor, source=source, meta=meta, idempotency_key=key)
            uow.commit()
    except (ConcurrencyError, IdempotencyConflict) as exc:
        raise Conflict(str(exc)) from None
    if result.rejected:  # raised after the commit: the AdmissionRejected event stays
        ev = result.events[0]
        raise rejection(ev.data, ev.position, dry_run=uow.dry_run)
    return Applied([_split_line(line) for line in result.lines], [event_ref(e) for e in result.events])


def delete_one(
    uow: UnitOfWork,
    info: KindInfo,
    namespace: str,
    name: str,
    *,
    actor: str,
    idempotency_key: str | None = None,
    idempotency_scope: str = "",
    expected_version: int | None = None,
    timed: Callable[[], AbstractContextManager[Any]] = nullcontext,
) -> tuple[EventRef, bool]:
    """Delete one object (``namespace`` '' for cluster-scoped kinds) as the request of ``uow``,
    and commit it: its Deleted event and whether it was appended by an earlier request with the
    same key. Raises NotFound or Conflict. ``timed`` wraps the delete itself, not an idempotent
    replay."""
    key = scoped_key(idempotency_key, idempotency_scope) if idempotency_key is not None else None
    digest = request_digest("delete", info.kind, namespace, name)
    stream = streams.object_stream(info.kind, namespace or None, name)
    try:
        if key is not None:
            assert idempotency_key is not None
            uow.lock_key(key)
            rows = log_q.events_by_ids(uow.conn, [request_event_id(key, 0)])
            if rows:
                r = rows[0]
                if (r.meta or {}).get("request_digest", digest) != digest:
                    raise _key_reused(idempotency_key)
                return EventRef(r.position, r.stream, r.version, r.type), True
        with timed():
            _check_version(uow, stream, expected_version)
            ev = delete_object(
                uow,
                info.kind,
                namespace or None,
                name,
                actor=actor,
                idempotency_key=key,
                meta={"request_digest": digest} if key is not None else None,
            )
            uow.commit()
    except (ConcurrencyError, IdempotencyConflict) as exc:
        raise Conflict(str(exc)) from None
    return event_ref(ev), False
