"""Audit services: explain, history, state at a position, replay/verify, what-if.

Shared by the CLI and the HTTP API. All functions are read-only over the log.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Engine


def explain(
    engine: Engine, kind: str, namespace: str, name: str, *, at: int | None = None, nodes: bool = False
) -> dict[str, Any]:
    """Why a PodGroup (``kind="podgroup"``) or Pod (``"pod"``) is where it is, as of ``at``.

    Returns a JSON-able dict: ``{"kind", "namespace", "name", "position", "verdict",
    "condition": {...}|None, "reasons": [str], "gates": [...], "attempts": int,
    "lastAttempt": {...}|None, "preemption": {...}|None, "quota": {...}|None, "pods": [...],
    "nodes": [...] (only with nodes=True)}``. Raises LookupError when the object is unknown.
    """
    from api import audit_impl

    return audit_impl.explain(engine, kind, namespace, name, at=at, nodes=nodes)


def render_explain(doc: dict[str, Any]) -> str:
    from api import audit_impl

    return audit_impl.render_explain(doc)


def history(engine: Engine, kind: str, namespace: str, name: str) -> list[dict[str, Any]]:
    """Timeline of the object's input events and of the decisions about it:
    ``[{"position", "time", "relative", "type", "stream", "summary", "data"}]`` in log order."""
    from api import audit_impl

    return audit_impl.history(engine, kind, namespace, name)


def state_at(engine: Engine, position: int) -> dict[str, Any]:
    """Every live object as of ``position``: ``{"position", "objects": [{kind, namespace, name, object, status}]}``."""
    from api import audit_impl

    return audit_impl.state_at(engine, position)


def whatif(engine: Engine, config: dict[str, Any]) -> dict[str, Any]:
    """Re-run the recorded inputs under another SchedulerConfig spec and diff the outcomes:
    ``{"changed": [{"group", "before", "after", "waitDelta"}], "preemptionsAdded": [...],
    "preemptionsAvoided": [...]}``."""
    from api import audit_impl

    return audit_impl.whatif(engine, config)
