"""Schedule: fold the log into a fresh scheduler and run cycles until nothing more can change."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ledger.queries.objects import list_objects
from scheduler.edge.bridge import Bridge, config_from

if TYPE_CHECKING:
    from ledger.database import Database


def current_config(db: Database) -> Any:
    """The scheduler configuration the log holds now (the defaults when none was applied)."""
    with db.connect() as conn:
        rows = list_objects(conn, "SchedulerConfig")
    return config_from(rows[0].object if rows else None)


def bound_count(result: Any) -> int:
    """How many pods one cycle result bound."""
    return sum(1 for dec in result.decisions if type(dec).__name__ == "PodBound")


def schedule_until_idle(
    db: Database,
    *,
    actor: str = "cli",
    on_start: Callable[[int], None] | None = None,
    on_cycle: Callable[[Any], None] | None = None,
) -> list[Any]:
    """Fold the log into a fresh scheduler and run cycles until idle, appending decisions;
    returns the cycle results. ``on_start`` learns how many pods wait for a node once the log
    is folded, ``on_cycle`` sees each cycle result as it completes (for a progress bar)."""
    bridge = Bridge(db, current_config(db), actor=actor)
    bridge.catch_up()
    if on_start is not None:
        on_start(sum(1 for p in bridge.scheduler.pods() if not p.node_name))
    if on_cycle is not None:
        bridge.on_cycle = on_cycle
    return list(bridge.run_until_idle(time.time()))


__all__ = ["bound_count", "current_config", "schedule_until_idle"]
