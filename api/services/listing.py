"""Listing objects: pages in (namespace, name) order with status and label filters, continued
by an opaque cursor."""

from __future__ import annotations

import base64
import re
from typing import TYPE_CHECKING, Any

import orjson

from api.services.errors import BadRequest
from ledger.queries import objects as objects_q
from ledger.resources.kinds import KindInfo

if TYPE_CHECKING:
    from ledger.database import Database

_SELECTOR = re.compile(r"^\s*([A-Za-z0-9./_-]+)\s*(==|=|!=)?\s*([A-Za-z0-9._-]*)\s*$")


def parse_selector(selector: str | None) -> list[tuple[str, str, str | None]]:
    """``app=x,tier!=db,gpu,!spot`` → [(key, op, value)]: equality, inequality, existence and
    absence; BadRequest names the part it cannot read."""
    if not selector:
        return []
    out: list[tuple[str, str, str | None]] = []
    for part in selector.split(","):
        if not part.strip():
            continue
        if part.strip().startswith("!"):
            m = _SELECTOR.match(part.strip()[1:])
            if not m or m.group(2):
                raise BadRequest(f"labelSelector: cannot read {part.strip()!r}")
            out.append((m.group(1), "!exists", None))
            continue
        m = _SELECTOR.match(part)
        if not m:
            raise BadRequest(f"labelSelector: cannot read {part.strip()!r}")
        k, op, v = m.group(1), m.group(2), m.group(3)
        if op is None:
            if v:
                raise BadRequest(f"labelSelector: cannot read {part.strip()!r}")
            out.append((k, "exists", None))
        else:
            out.append((k, "!=" if op == "!=" else "=", v))
    return out


def encode_cursor(ns: str, name: str) -> str:
    return base64.urlsafe_b64encode(orjson.dumps([ns, name])).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[str, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        ns, name = orjson.loads(raw)
        if not isinstance(ns, str) or not isinstance(name, str):
            raise ValueError
        if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in ns + name):
            raise ValueError  # no object is named so; PostgreSQL text cannot hold NUL
        return ns, name
    except Exception:
        raise BadRequest("cursor is not one this server handed out") from None


def list_page(
    db: Database,
    info: KindInfo,
    *,
    namespace: str | None,
    status: str | None,
    label_selector: str | None,
    limit: int,
    cursor: str | None,
) -> tuple[list[dict[str, Any]], str | None]:
    """Up to ``limit`` objects (manifest + status) of a kind, and the cursor of the next page
    (None on the last). ``status`` filters pods by phase and groups by the reason of their
    InitiallyScheduled condition ("Pending" when none)."""
    after = decode_cursor(cursor) if cursor else None
    selector = parse_selector(label_selector)
    status_of = None
    if status:
        status_of = "pod" if info.kind == "Pod" else "group" if "Group" in info.kind else None
        if status_of is None:
            raise BadRequest(f"status filters apply to pods and groups, not {info.plural}")
    with db.connect() as conn:
        rows, nxt = objects_q.list_page(
            conn,
            info.kind,
            namespace=namespace if info.namespaced else None,
            status_of=status_of,
            status=status,
            selector=selector,
            limit=limit,
            after=after,
        )
    return [r.full() for r in rows], (encode_cursor(*nxt) if nxt else None)


__all__ = ["decode_cursor", "encode_cursor", "list_page", "parse_selector"]
