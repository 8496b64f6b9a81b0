"""Small service functions the CLI and the HTTP API share: apply, delete, get.

One request is one transaction: the current state is read, admission runs (pure), and the
resulting events are appended and projected together with expected stream versions, so a
concurrent change of the same object raises a conflict instead of being overwritten.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from ledger import writer
from ledger.events import input_event_type
from ledger.resources.admission import AdmissionOutcome, admit
from ledger.resources.errors import DocumentParseError, FieldError
from ledger.resources.kinds import get_kind
from ledger.resources.models import Resource
from ledger.resources.parse import Document, validate
from ledger.store import NewEvent, StoredEvent

UID_NAMESPACE = uuid.UUID("6f0c4b36-6a44-4b8e-9a51-7d1f3c2e9a10")
REJECTIONS_STREAM = "admission/rejections"


def stream_for(kind: str, namespace: str | None, name: str) -> str:
    k = kind.lower()
    return f"{k}/{namespace}/{name}" if namespace else f"{k}/{name}"


class _DbState:
    """AdmissionState over the ``objects`` projection, read inside the request's transaction.

    One statement reads, for every object of the request, its stored object and its stream's
    version (so the versions the append expects were read together with the state admission
    judged), plus every PriorityClass (a small kind that admission of pods and groups needs).
    """

    PRELOADED = "PriorityClass"

    def __init__(self, conn: Connection, keys: Iterable[tuple[str, str, str]]) -> None:
        self.conn = conn
        self._cache: dict[tuple[str, str, str], Mapping[str, Any] | None] = {}
        self._lists: dict[str, list[Mapping[str, Any]]] = {}
        self.versions: dict[str, int] = {}  # stream -> version (0 = none) of each requested object
        keys = list(keys)
        streams = [stream_for(k, n or None, m) for k, n, m in keys]
        rows = conn.execute(
            sa.text(
                "SELECT q.kind, q.namespace, q.name, o.object, q.stream, coalesce(s.version, 0) "
                "FROM unnest(CAST(:k AS text[]), CAST(:n AS text[]), CAST(:m AS text[]), CAST(:s AS text[])) "
                "AS q(kind, namespace, name, stream) "
                "LEFT JOIN objects o ON o.kind = q.kind AND o.namespace = q.namespace AND o.name = q.name "
                "LEFT JOIN streams s ON s.stream = q.stream "
                "UNION ALL "
                "SELECT kind, namespace, name, object, NULL, NULL FROM objects WHERE kind = :pk"
            ),
            {
                "k": [k[0] for k in keys],
                "n": [k[1] for k in keys],
                "m": [k[2] for k in keys],
                "s": streams,
                "pk": self.PRELOADED,
            },
        )
        preloaded: list[tuple[str, str, Mapping[str, Any]]] = []
        for kind, ns, name, obj, stream, version in rows:
            if stream is None:
                preloaded.append((ns, name, obj))
                self._cache[(kind, ns, name)] = obj
            else:
                self._cache.setdefault((kind, ns, name), obj)
                self.versions[stream] = int(version)
        self._lists[self.PRELOADED] = [obj for _ns, _name, obj in sorted(preloaded, key=lambda r: r[:2])]

    def get(self, kind: str, namespace: str | None, name: str) -> Mapping[str, Any] | None:
        key = (kind, namespace or "", name)
        if key not in self._cache:
            if kind == self.PRELOADED:
                return None  # every object of that kind was read up front
            row = self.conn.execute(
                sa.text("SELECT object FROM objects WHERE kind = :k AND namespace = :n AND name = :m"),
                {"k": key[0], "n": key[1], "m": key[2]},
            ).first()
            self._cache[key] = row[0] if row else None
        return self._cache[key]

    def list(self, kind: str) -> list[Mapping[str, Any]]:
        if kind not in self._lists:
            rows = self.conn.execute(
                sa.text("SELECT object FROM objects WHERE kind = :k ORDER BY namespace, name"), {"k": kind}
            )
            self._lists[kind] = [r[0] for r in rows]
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


def load_documents(docs: Iterable[Document]) -> tuple[list[Resource], list[str]]:
    """Validate documents; returns the objects and every error (parse errors stop the read)."""
    objects: list[Resource] = []
    errors: list[str] = []
    try:
        for doc in docs:
            obj, errs = validate(doc)
            if obj is not None and not errs:
                objects.append(obj)
            errors.extend(str(e) for e in errs)
    except DocumentParseError as exc:
        errors.append(str(exc))
    return objects, errors


def request_event_id(idempotency_key: str, part: int | str) -> uuid.UUID:
    """The event id of one event of a keyed request (a retried request maps to the same ids)."""
    return uuid.uuid5(UID_NAMESPACE, f"{idempotency_key}:{part}")


def _fill_uid(normalized: dict[str, Any], kind: str, ns: str | None, name: str, version: int) -> None:
    meta = normalized.setdefault("metadata", {})
    if not meta.get("uid"):
        # Deterministic: the same request on the same log gives the same uid (replays and
        # simulations are byte-for-byte reproducible); a re-created object gets a new one.
        meta["uid"] = str(uuid.uuid5(UID_NAMESPACE, f"{stream_for(kind, ns, name)}#{version + 1}"))


def apply_objects(
    engine: Engine,
    objects: Sequence[Resource],
    *,
    actor: str = "cli",
    source: str = "",
    effective_at: datetime | None = None,
    meta: Mapping[str, Any] | None = None,
    idempotency_key: str | None = None,
) -> ApplyResult:
    """Admit and append ``objects`` as one transaction. A refused request appends exactly one
    ``AdmissionRejected`` event and changes no state."""
    result = ApplyResult()
    if not objects:
        return result
    base_meta = {"actor": actor, **(meta or {})}
    with engine.begin() as conn:
        keys = [(o.KIND, o.metadata.namespace or "", o.name) for o in objects]
        state = _DbState(conn, keys)
        outcome: AdmissionOutcome = admit(objects, state)
        if outcome.refused:
            record = outcome.rejection_record()
            data = {"actor": actor, "source": source, **record}
            eid = request_event_id(idempotency_key, "rejected") if idempotency_key else None
            result.events = writer.write(
                conn, [NewEvent(REJECTIONS_STREAM, "AdmissionRejected", data, base_meta, eid, effective_at)]
            )
            result.errors = [str(r) for r in outcome.rejected]
            result.rejected = True
            return result
        streams = sorted({stream_for(r.kind, r.namespace, r.name) for r in outcome.changes})
        # every changed object was one of the request's keys: _DbState read its stream's version
        versions = {s: state.versions[s] for s in streams}
        pending = dict(versions)
        new_events: list[NewEvent] = []
        for i, r in enumerate(outcome.changes):
            assert r.normalized is not None
            stream = stream_for(r.kind, r.namespace, r.name)
            _fill_uid(r.normalized, r.kind, r.namespace, r.name, pending[stream])
            if r.previous is not None and r.previous.get("metadata", {}).get("uid"):
                r.normalized["metadata"]["uid"] = r.previous["metadata"]["uid"]
            action = "Created" if r.action == "created" else "Updated"
            eid = request_event_id(idempotency_key, i) if idempotency_key else None
            new_events.append(
                NewEvent(
                    stream,
                    input_event_type(r.kind, action),
                    {"object": r.normalized},
                    base_meta,
                    eid,
                    effective_at,
                )
            )
            pending[stream] += 1
        if new_events:
            result.events = writer.write(conn, new_events, versions)
        result.lines = outcome.lines()
    return result


def delete_object(
    engine: Engine,
    kind: str,
    namespace: str | None,
    name: str,
    *,
    actor: str = "cli",
    effective_at: datetime | None = None,
    idempotency_key: str | None = None,
) -> StoredEvent:
    """Delete one object; raises LookupError (appending nothing) if it does not exist."""
    return delete_objects(
        engine, [(kind, namespace, name)], actor=actor, effective_at=effective_at, idempotency_key=idempotency_key
    )[0]


def delete_objects(
    engine: Engine,
    refs: Sequence[tuple[str, str | None, str]],
    *,
    actor: str = "cli",
    effective_at: datetime | None = None,
    idempotency_key: str | None = None,
) -> list[StoredEvent]:
    """Delete several objects ``(kind, namespace, name)`` in one transaction (one append).

    If any object is missing, raises LookupError and deletes nothing. Event ids derive from
    ``idempotency_key`` and the index in ``refs``.
    """
    if not refs:
        return []
    keys: list[tuple[str, str, str]] = []
    for kind, namespace, name in refs:
        info = get_kind(kind)
        keys.append((info.kind, (namespace or "default") if info.namespaced else "", name))
    if len(set(keys)) != len(keys):
        raise ValueError("the same object is named twice in one delete request")
    streams = [stream_for(k, n or None, m) for k, n, m in keys]
    with engine.begin() as conn:
        state = _DbState(conn, keys)  # one statement: the objects and their streams' versions
        for key in keys:
            if state.get(*key) is None:
                where = f"{key[1]}/{key[2]}" if key[1] else key[2]
                raise LookupError(f'{key[0]} "{where}" not found')
        events = [
            NewEvent(
                stream,
                input_event_type(kind, "Deleted"),
                {"kind": kind, "namespace": ns, "name": name},
                {"actor": actor},
                request_event_id(idempotency_key, i) if idempotency_key else None,
                effective_at,
            )
            for i, ((kind, ns, name), stream) in enumerate(zip(keys, streams, strict=True))
        ]
        return writer.write(conn, events, {s: state.versions[s] for s in streams})


@dataclass(frozen=True)
class ObjectRow:
    kind: str
    namespace: str
    name: str
    object: dict[str, Any]
    status: dict[str, Any]
    created_at: datetime
    updated_position: int

    def full(self) -> dict[str, Any]:
        """The object as a user sees it: the stored manifest plus the projected status."""
        obj = dict(self.object)
        status = dict(obj.get("status") or {})
        status.update({k: v for k, v in self.status.items() if v is not None})
        if status:
            obj["status"] = status
        return obj


def list_objects(
    target: Engine | Connection, kind: str, namespace: str | None = None, name: str | None = None
) -> list[ObjectRow]:
    if isinstance(target, Engine):
        with target.connect() as conn:
            return list_objects(conn, kind, namespace, name)
    q = "SELECT kind, namespace, name, object, status, created_at, updated_position FROM objects WHERE kind = :k"
    params: dict[str, Any] = {"k": kind}
    if namespace is not None:
        q += " AND namespace = :n"
        params["n"] = namespace
    if name is not None:
        q += " AND name = :m"
        params["m"] = name
    q += " ORDER BY namespace, name"
    return [ObjectRow(*r) for r in target.execute(sa.text(q), params)]



def dumps(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()


__all__ = [
    "ApplyResult",
    "FieldError",
    "apply_objects",
    "delete_object",
    "delete_objects",
    "list_objects",
    "load_documents",
    "stream_for",
]
