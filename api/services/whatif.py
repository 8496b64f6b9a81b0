"""What-if: the recorded inputs re-run under another scheduler configuration, outcomes compared."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from api.services import placement_diff
from api.services.replay import produced_decisions, recorded_runs
from ledger.store import StoredEvent
from scheduler.edge.bridge import Bridge, config_from, ts

if TYPE_CHECKING:
    from ledger.database import Database


def _outcomes(
    decisions: list[tuple[float, str, dict[str, Any]]],
) -> tuple[dict[str, dict[str, Any]], set[str]]:
    """Per group its last condition and first scheduled time; and every preemption victim."""
    groups: dict[str, dict[str, Any]] = {}
    victims: set[str] = set()
    for when, typ, data in decisions:
        if typ == "PodGroupConditionChanged":
            g = groups.setdefault(data["group"], {"status": None, "reason": None, "scheduled_at": None})
            g["status"], g["reason"], g["message"] = data["status"], data["reason"], data["message"]
            if data["status"] == "True" and g["scheduled_at"] is None:
                g["scheduled_at"] = when
        elif typ == "PodPreempted":
            victims.add(data["victim"])
    return groups, victims


def whatif(db: Database, config: dict[str, Any]) -> dict[str, Any]:
    """Re-run the recorded inputs under ``config`` at the recorded run times (plus any timer the
    new configuration sets before the next input) and compare outcomes with the recorded ones.

    Returns {changed: [per group whose final condition or time to schedule differs: before,
    after, waitDelta, outcomeChanged], preemptionsAdded, preemptionsAvoided, recordedDecisions,
    replayedDecisions, placements: per pod and per node what was placed differently and the GPUs
    allocated (``placement_diff.diff``)}. Nothing is appended: the log is only read.
    """
    new_cfg = config_from({"spec": config} if "spec" not in config else config)
    recorded: list[tuple[float, str, dict[str, Any]]] = []
    replayed: list[tuple[float, str, dict[str, Any]]] = []
    created: dict[str, float] = {}
    bridge = Bridge(db, new_cfg)
    bridge.follow_config = False

    def run_at(now: float) -> None:
        for _stream, typ, data in produced_decisions(bridge, now):
            replayed.append((now, typ, data))

    def drain(until: float | None) -> None:
        # timers of the new configuration that fall before the next input
        for _ in range(10_000):
            nxt = bridge.scheduler.next_timer(last_now[0])
            if nxt is None or (until is not None and nxt >= until):
                break
            last_now[0] = nxt
            run_at(nxt)

    last_now = [0.0]
    pending: list[StoredEvent] = []

    def fold_upto(pos: int | None) -> None:
        # Inputs are folded lazily, up to each run's recorded snapshot (as in verify_replay);
        # timers of the new configuration that fall before an input fire first.
        while pending and (pos is None or pending[0].position <= pos):
            ev = pending.pop(0)
            t = ts(ev.effective_at)
            drain(t)
            if ev.type == "PodGroupCreated":
                obj = ev.data["object"]["metadata"]
                created.setdefault(f"{obj.get('namespace') or 'default'}/{obj['name']}", t)
            bridge.fold(ev)
            last_now[0] = max(last_now[0], t)

    for kind, item in recorded_runs(db):
        if kind == "start":
            continue
        if kind == "input":
            pending.append(item)
            continue
        t = ts(item[0].effective_at)
        for e in item:
            recorded.append((t, e.type, e.data))
        fold_upto(int((item[0].meta or {}).get("snapshot_position", item[0].position - 1)))
        drain(t)
        last_now[0] = t
        run_at(t)
    fold_upto(None)
    drain(last_now[0] + 3600)

    before, v_before = _outcomes(recorded)
    after, v_after = _outcomes(replayed)
    pods = bridge.scheduler.state.pods
    placements = placement_diff.diff(
        placement_diff.placements(recorded), placement_diff.placements(replayed), pods
    )
    changed = []
    for g in sorted(set(before) | set(after) | set(created)):
        b, a = before.get(g, {}), after.get(g, {})
        if (b.get("status"), b.get("reason")) != (a.get("status"), a.get("reason")) or b.get(
            "scheduled_at"
        ) != a.get("scheduled_at"):
            c0 = created.get(g)
            wb = (b["scheduled_at"] - c0) if b.get("scheduled_at") is not None and c0 is not None else None
            wa = (a["scheduled_at"] - c0) if a.get("scheduled_at") is not None and c0 is not None else None
            changed.append(
                {
                    "group": g,
                    "before": {"status": b.get("status"), "reason": b.get("reason"), "waitSeconds": wb},
                    "after": {"status": a.get("status"), "reason": a.get("reason"), "waitSeconds": wa},
                    "waitDelta": (wa - wb) if wa is not None and wb is not None else None,
                    "outcomeChanged": (b.get("status"), b.get("reason"))
                    != (a.get("status"), a.get("reason")),
                }
            )
    return {
        "changed": changed,
        "preemptionsAdded": sorted(v_after - v_before),
        "preemptionsAvoided": sorted(v_before - v_after),
        "recordedDecisions": len(recorded),
        "replayedDecisions": len(replayed),
        "placements": placements,
    }


__all__ = ["whatif"]
