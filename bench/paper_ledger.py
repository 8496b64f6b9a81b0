"""What a ``bench.paper`` run reports, read back from the run's ledger (not the simulator's memory):
the ``objects`` projection gives each bound pod's node, the log's ``PodBound`` events its devices."""

from __future__ import annotations

from typing import Any

from ledger.sql import rows

Placements = dict[str, tuple[str, tuple[int, ...]]]


def placements_from_views(database: Any, namespace: str) -> Placements:
    """``ns/name -> (node, devices)`` of every pod of ``namespace`` the projection shows bound;
    its devices are those of the pod's last ``PodBound`` event (none for a CPU-only pod)."""
    with database.snapshot() as conn:
        bound = rows(
            conn,
            "SELECT name, status->>'nodeName' AS node FROM objects "
            "WHERE kind = 'Pod' AND namespace = %(ns)s AND status->>'phase' = 'Bound'",
            {"ns": namespace},
        )
        devices = rows(
            conn,
            "SELECT DISTINCT ON (data->>'pod') data->>'pod' AS pod, data->'gpus' AS gpus FROM events "
            "WHERE type = 'PodBound' ORDER BY data->>'pod', position DESC",
        )
    gpus = {pod: tuple(int(i) for i in (g or ())) for pod, g in devices}
    out: Placements = {}
    for name, node in bound:
        key = f"{namespace}/{name}"
        out[key] = (node, gpus.get(key, ()))
    return out
