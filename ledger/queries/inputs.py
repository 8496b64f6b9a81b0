"""The scheduling inputs that changed in a range of the log (issue 21, "what changed since the
last attempt"): edits of the namespace's quotas, the quota trees, nodes, the namespace's
PodDisruptionBudgets, priority classes and the group's own spec, between two positions.

``input_changes`` returns the events; ``summarise`` folds them into one entry per object (its
last change and how many there were), with long lists counted rather than listed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ledger.resources.kinds import resolve_kind
from ledger.sql import Conn

# stream prefixes of the inputs a group's verdict depends on; "{ns}" is the group's namespace
INPUT_PREFIXES = (
    "elasticquota/{ns}/",
    "elasticquotatree/",
    "node/",
    "poddisruptionbudget/{ns}/",
    "priorityclass/",
)
_SUFFIXES = ("Created", "Updated", "Deleted")


def _escape(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _kind_of(stream: str, fallback: str) -> str:
    """The kind an input stream (``<singular kind>/[ns/]name``) holds."""
    try:
        return resolve_kind(stream.split("/", 1)[0]).kind
    except (KeyError, ValueError, LookupError):
        return fallback


def input_changes(
    conn: Conn, namespace: str, group_streams: Sequence[str], after: int, upto: int
) -> list[dict[str, Any]]:
    """Input events (created/updated/deleted) in positions ``(after, upto]`` of the streams above
    and of ``group_streams`` (the group's own spec), as {position, type, stream, kind, name,
    change, at}, in log order."""
    if upto <= after:
        return []
    prefixes = [_escape(p.format(ns=namespace)) for p in INPUT_PREFIXES]
    # one function (migration 0023): planned once per session, the inputs through their partial
    # index and the group's own streams through event_keys' (stream, version), so neither reads
    # the other events of the range (a range since an attempt long ago is most of the log)
    rows = conn.execute(
        "SELECT * FROM ledger_input_changes(%s::bigint, %s::bigint, %s::text[], %s::text[])",
        (after, upto, prefixes, list(group_streams)),
    ).fetchall()
    out = []
    for position, typ, stream, at in rows:
        change = next(s for s in _SUFFIXES if typ.endswith(s))
        out.append(
            {
                "position": position,
                "type": typ,
                "stream": stream,
                "kind": _kind_of(stream, typ[: -len(change)]),
                "name": stream.split("/", 1)[1] if "/" in stream else stream,
                "change": change.lower(),
                "at": at,
            }
        )
    return out


def summarise(changes: Sequence[dict[str, Any]], *, max_names: int = 8) -> list[dict[str, Any]]:
    """One entry per kind, in the order of its first change: ``{kind, objects, events, names,
    more, positions}``: how many objects of the kind changed and how many events, the first
    ``max_names`` object names with their last change (``name (updated)``), ``more`` the
    others' count, and the first and last position. Nothing is cut, long lists are counted."""
    kinds: dict[str, dict[str, Any]] = {}
    for c in changes:
        k = kinds.setdefault(c["kind"], {"kind": c["kind"], "events": 0, "_last": {}, "first": c["position"]})
        k["events"] += 1
        k["_last"].pop(c["name"], None)
        k["_last"][c["name"]] = c["change"]  # order of each object's last change
        k["last"] = c["position"]
    out = []
    for k in kinds.values():
        last: dict[str, str] = k.pop("_last")
        names = [f"{n} ({ch})" for n, ch in list(last.items())[:max_names]]
        out.append({**k, "objects": len(last), "names": names, "more": max(0, len(last) - max_names)})
    return out


def describe(summary: Sequence[dict[str, Any]]) -> list[str]:
    """One line per kind of a ``summarise`` result."""
    lines = []
    for k in summary:
        more = f", …and {k['more']} more" if k["more"] else ""
        lines.append(
            f"{k['kind']}: {k['objects']} object(s), {k['events']} change(s) at positions "
            f"{k['first']}..{k['last']}: {', '.join(k['names'])}{more}"
        )
    return lines


__all__ = ["INPUT_PREFIXES", "describe", "input_changes", "summarise"]
