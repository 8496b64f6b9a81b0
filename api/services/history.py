"""History: one object's timeline from the log."""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Engine

from api.services.errors import NotFound
from ledger.queries import log as log_q
from ledger.resources.kinds import get_kind, resolve_kind
from ledger.store import StoredEvent


def canonical_kind(kind: str) -> str:
    """The kind's name (PodGroup, Pod, …) from any name a user types for it."""
    k = kind.lower()
    if k in ("podgroup", "podgroups", "pg"):
        return "PodGroup"
    if k in ("compositepodgroup", "compositepodgroups", "cpg"):
        return "CompositePodGroup"
    if k in ("pod", "pods", "po"):
        return "Pod"
    return resolve_kind(kind).kind


def _fmt_rel(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"+{seconds:.0f}s" if seconds >= 1 or seconds == 0 else f"+{seconds * 1000:.0f}ms"
    m, s = divmod(int(seconds), 60)
    if m < 60:
        return f"+{m}m{s:02d}s"
    h, m = divmod(m, 60)
    return f"+{h}h{m:02d}m"


def _retried(d: dict[str, Any]) -> str:
    """A retry with the verdict stored at ``diagnosis_position``; with ``attempts`` it is the
    whole cycle (nothing else changed): requeued, and when it backs off, for how long."""
    text = f"retried, same verdict as position {d.get('diagnosis_position')}"
    if d.get("attempts") is not None:
        text += f" (attempt {d['attempts']}"
        text += f", next try in {d['backoff']:g}s)" if d.get("backoff") is not None else ")"
    return text


def _summary(e: StoredEvent | dict[str, Any]) -> str:
    t = e["type"] if isinstance(e, dict) else e.type
    d = e["data"] if isinstance(e, dict) else e.data
    if t.endswith("Created") or t.endswith("Updated"):
        return "object " + t[len(t) - 7 :].lower()
    if t.endswith("Deleted"):
        return "object deleted"
    return {
        "PodBound": lambda: f"bound to {d.get('node')}",
        "PodNominated": lambda: f"nominated to {d.get('node')}",
        "PodUnschedulable": lambda: f"{d.get('reason')}: {d.get('message')}",
        "PodGated": lambda: f"waiting ({d.get('plugin')}): {d.get('message')}",
        "PodPreempted": lambda: f"preempted by {d.get('preemptor')} on {d.get('node')} ({d.get('rule')})",
        "PodGroupConditionChanged": lambda: (
            f"{d.get('type')}={d.get('status')} {d.get('reason')}: {d.get('message')}"
        ),
        "PodGroupSatisfiedChanged": lambda: (
            f"PodGroupSatisfied={d.get('status')} {d.get('reason')}: {d.get('message')}"
        ),
        "CompositePodGroupConditionChanged": lambda: (
            f"{d.get('type')}={d.get('status')} {d.get('reason')}: {d.get('message')}"
        ),
        "PodGroupScheduled": lambda: (
            f"scheduled {len(d.get('pods') or [])} pod(s)"
            + (f" in {d['placement']}" if d.get("placement") else "")
        ),
        "PodGroupUnschedulable": lambda: f"{d.get('reason')}: {d.get('message')}",
        "PodGroupRetried": lambda: _retried(d),
        "PodRetried": lambda: _retried(d),
        "PodGroupRequeued": lambda: f"requeued to {d.get('queue')} (attempt {d.get('attempts')})",
        "PodRequeued": lambda: f"requeued to {d.get('queue')} (attempt {d.get('attempts')})",
    }.get(t, lambda: "")()


def history(engine: Engine, kind: str, namespace: str, name: str) -> list[dict[str, Any]]:
    """The object's timeline: every event of its input and scheduler streams, the preemptions it
    caused and the admission refusals naming it, each with a one-line summary and its time
    relative to the first. Raises NotFound (a LookupError) when the log holds none."""
    kind = canonical_kind(kind)
    info = get_kind(kind)
    ns = (namespace or "default") if info.namespaced else ""
    key = f"{ns}/{name}" if ns else name
    streams = [f"{kind.lower()}/{key}", f"sched/{kind.lower()}/{key}"]
    with engine.connect() as conn:
        rows = log_q.object_history(conn, kind, key, name, streams)
    if not rows:
        raise NotFound(f"no events for {kind} {key}")
    t0 = rows[0]["at"]
    return [
        {
            "position": r["position"],
            "time": r["at"].isoformat(),
            "relative": _fmt_rel((r["at"] - t0).total_seconds()),
            "type": r["type"],
            "stream": r["stream"],
            "summary": _summary(r),
            "data": r["data"],
        }
        for r in rows
    ]


__all__ = ["canonical_kind", "history"]
