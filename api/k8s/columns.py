"""Column helpers shared by the Table printers (``table``, ``printers``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def human_age(created: str | None, now: datetime | None = None) -> str:
    if not created:
        return "<unknown>"
    t = datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    secs = int(((now or datetime.now(UTC)) - t).total_seconds())
    if secs < 0:
        secs = 0
    if secs < 120:
        return f"{secs}s"
    mins = secs // 60
    if mins < 10:
        return f"{mins}m{secs % 60}s" if secs % 60 else f"{mins}m"
    if mins < 180:
        return f"{mins}m"
    hours = mins // 60
    if hours < 8:
        return f"{hours}h{mins % 60}m" if mins % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if days < 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    return f"{days}d"


def _col(name: str, typ: str = "string", priority: int = 0, fmt: str = "", desc: str = "") -> dict[str, Any]:
    return {"name": name, "type": typ, "format": fmt, "description": desc or name, "priority": priority}


NAME = _col("Name", fmt="name", desc="Name of the object")
AGE = _col("Age", desc="Time since the object was created")


def _meta(o: dict[str, Any]) -> dict[str, Any]:
    return o.get("metadata") or {}
