"""Reads of ``explain`` beyond its object and decisions, on the caller's connection (one pooled
connection per explain: a checkout and its reset cost a round trip each): the inputs that
changed around the last attempts, the cluster's observed bindings on a shadow ledger, and the
cluster scheduler's own Events on any ledger ``attach`` writes."""

from __future__ import annotations

from typing import Any

from ledger.queries import inputs as inputs_q
from ledger.queries import log as log_q
from ledger.sql import Conn


def shadow_section(
    conn: Conn,
    namespace: str,
    pods: list[dict[str, Any]],
    pos: int,
    observed: dict[str, dict[str, Any]] | None = None,
) -> list[dict[str, Any]] | None:
    """On a shadow ledger (``attach --mode shadow``): per pod, where podledger placed it and
    where the cluster's own scheduler did, and whether they differ. None when the cluster's
    bindings of these pods were not observed. ``observed``: the bindings already read (live
    explain's one statement), else read here as of ``pos``."""
    keys = [f"{namespace}/{p['name']}" for p in pods]
    seen = observed if observed is not None else log_q.observed_bindings(conn, keys, pos)
    if not seen:
        return None
    out = []
    for p, key in zip(pods, keys, strict=True):
        o = seen.get(key) or {}
        out.append(
            {
                "name": p["name"],
                "podledgerNode": p["node"],
                "clusterNode": o.get("node"),
                "clusterScheduler": o.get("scheduler"),
                "differs": p["node"] != o.get("node"),
            }
        )
    return out


def changes(
    conn: Conn, kind: str, namespace: str, name: str, group: str | None, attempts: list[int], pos: int
) -> dict[str, Any]:
    """The inputs (quotas, nodes, PDBs, priority classes, the group's spec) that changed between
    the last two attempts (``betweenAttempts``: what the last verdict saw that the one before did
    not) and since the last attempt (``sinceLastAttempt``: what no verdict has seen yet), each
    ``{from, to, kinds}`` with ``kinds`` per kind of input (``ledger.queries.inputs.summarise``).
    One read of the whole range, split at the last attempt."""
    own = [f"{kind.lower()}/{namespace}/{name}"]
    if group and kind == "Pod":
        own.append(f"podgroup/{namespace}/{group}")
    out: dict[str, Any] = {}
    if not attempts:
        return out
    last = attempts[-1]
    start = attempts[-2] if len(attempts) >= 2 else last
    rows = inputs_q.input_changes(conn, namespace, own, start, max(pos, last))
    if len(attempts) >= 2:
        out["betweenAttempts"] = {
            "from": start,
            "to": last,
            "kinds": inputs_q.summarise([r for r in rows if r["position"] <= last]),
        }
    out["sinceLastAttempt"] = {
        "from": last,
        "to": pos,
        "kinds": inputs_q.summarise([r for r in rows if last < r["position"] <= pos]),
    }
    return out


def render_changes(changes: dict[str, Any]) -> list[str]:
    """What changed since the last attempt, for ``render_explain``."""
    lines: list[str] = []
    for key, title in (
        ("betweenAttempts", "Changed between the last two attempts"),
        ("sinceLastAttempt", "Changed since the last attempt (no verdict has seen it yet)"),
    ):
        part = changes.get(key)
        if part is None:
            continue
        kinds = part["kinds"]
        lines.append(
            f"  {title} (positions {part['from']}..{part['to']}): {'' if kinds else 'no inputs'}".rstrip()
        )
        lines.extend(f"    - {ln}" for ln in inputs_q.describe(kinds))
    return lines


__all__ = ["changes", "render_changes", "shadow_section"]


def cluster_events(
    conn: Conn, kind: str, namespace: str, name: str, pods: list[dict[str, Any]], pos: int, limit: int = 10
) -> list[dict[str, Any]] | None:
    """On a ledger ``attach`` writes: the cluster's own scheduling Events (``ClusterEventObserved``)
    about the object and its pods as of ``pos``, the newest of each (object, reason), newest first,
    at most ``limit``; None when there are none (a ledger that attaches no cluster)."""
    streams = [f"attach/event/{kind.lower()}/{namespace}/{name}"]
    streams += [f"attach/event/pod/{namespace}/{p['name']}" for p in pods if kind != "Pod"]
    rows = conn.execute(
        "SELECT * FROM (SELECT DISTINCT ON (data->>'object', data->>'reason') data, position FROM events "
        "WHERE position IN (SELECT k.position FROM event_keys k WHERE k.stream = ANY(%(s)s)) "
        "AND type = 'ClusterEventObserved' AND position <= %(p)s "
        "ORDER BY data->>'object', data->>'reason', position DESC) last ORDER BY position DESC LIMIT %(l)s",
        {"s": streams, "p": pos, "l": limit},
    ).fetchall()
    if not rows:
        return None
    return [
        {
            "object": d.get("object"),
            "type": d.get("type"),
            "reason": d.get("reason"),
            "message": d.get("message"),
            "count": d.get("count"),
            "lastTime": d.get("last_time"),
            "reporter": d.get("reporting_controller"),
            "position": position,
        }
        for d, position in rows
    ]
