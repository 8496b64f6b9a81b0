"""Objects as a user reads them: the kind a user named, manifests validated for a request, and
one object with its stream version (the value If-Match expects). The writes (apply, delete)
are commands: ``api/services/commands/objects.py``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import orjson

from api.services.errors import NotFound
from ledger import streams
from ledger.queries import objects as objects_q
from ledger.queries.objects import ObjectRow, list_objects
from ledger.resources.errors import DocumentParseError, FieldError
from ledger.resources.kinds import KindInfo, UnknownKindError, resolve_kind
from ledger.resources.models import Resource
from ledger.resources.parse import Document, validate

if TYPE_CHECKING:
    from ledger.database import Database


def kind_info(kind: str) -> KindInfo:
    """The kind named by a user (plural, singular, short name …); NotFound if unknown."""
    try:
        return resolve_kind(kind)
    except UnknownKindError as exc:
        raise NotFound(str(exc).strip("'\"")) from None


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


def get_one(db: Database, info: KindInfo, namespace: str, name: str) -> tuple[dict[str, Any], int]:
    """One object as a user sees it (manifest + projected status) and its stream version (the
    value If-Match expects). Raises NotFound."""
    with db.transaction() as conn:
        rows = list_objects(conn, info.kind, namespace, name)
        if not rows:
            where = f"{namespace}/{name}" if namespace else name
            raise NotFound(f'{info.kind} "{where}" not found')
        versions = objects_q.stream_versions(
            conn, [streams.object_stream(info.kind, namespace or None, name)]
        )
    return rows[0].full(), next(iter(versions.values()), 0)


def dumps(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()


__all__ = ["FieldError", "ObjectRow", "dumps", "get_one", "kind_info", "list_objects", "load_documents"]
