"""Acceptance (issue 6): each preemption in a scenario's log joins, in ONE SQL query, to its
preemptor, its rule and the quota state at that moment; thrash is visible in ``v_thrash``.

The scenarios are the repo's own files (quota story 1 and the thrash case), run on the test
database with ``api.services.simulate.Simulation``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from api.services.replay import verify_replay
from api.services.simulate import Simulation
from ledger.database import Database
from ledger.sql import dicts

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"

# One query: the preemption event (rule, priorities, unit) -> the preemptor object as it is now
# (kind from preemptor_kind) -> the preemptor's quota as recorded in the decision, and the same
# quota's usage re-derived from the log alone (v_quota_usage: running sum of binds minus
# preemptions/deletions of that namespace, last change strictly before the preemption).
JOIN_SQL = """
SELECT p.position, p.victim, p.preemptor, p.preemptor_kind, p.rule,
       p.victim_priority, p.preemptor_priority,
       o.object->'spec'->>'priorityClassName' AS preemptor_class,
       o.status->>'phase' AS preemptor_phase,
       e.data->'quota'->>'name' AS quota,
       (e.data->'quota'->'used'->>'nvidia.com/gpu')::int AS quota_used,
       (e.data->'quota'->'min'->>'nvidia.com/gpu')::int AS quota_min,
       (e.data->'quota'->'max'->>'nvidia.com/gpu')::int AS quota_max,
       (e.data->'quota'->'request'->>'nvidia.com/gpu')::int AS quota_request,
       e.data->'quota'->'victim'->>'name' AS victim_quota,
       (e.data->'quota'->'victim'->'used'->>'nvidia.com/gpu')::int AS victim_quota_used,
       u.gpus_used AS used_from_log
FROM v_preemptions p
JOIN events e ON e.position = p.position
JOIN objects o
  ON o.kind = CASE p.preemptor_kind WHEN 'pod' THEN 'Pod' WHEN 'podgroup' THEN 'PodGroup'
                                    ELSE 'CompositePodGroup' END
 AND o.namespace = split_part(p.preemptor, '/', 1) AND o.name = split_part(p.preemptor, '/', 2)
LEFT JOIN LATERAL (
    SELECT v.gpus_used FROM v_quota_usage v
    WHERE v.namespace = split_part(p.preemptor, '/', 1) AND v.position < p.position
    ORDER BY v.position DESC LIMIT 1
) u ON true
ORDER BY p.position
"""


def _run(database: Database, name: str) -> None:
    doc = yaml.safe_load((SCENARIOS / f"{name}.yaml").read_text())
    sim = Simulation(database, doc["spec"], name)
    report = sim.run(list(doc["spec"]["steps"]))
    assert report.passed, report.failures


def test_preemption_joins_preemptor_rule_and_quota_state(database: Database) -> None:
    _run(database, "quota-story-1-reclaim-borrowed")
    with database.connect() as conn:
        rows: list[dict[str, Any]] = dicts(conn, JOIN_SQL)
    assert len(rows) == 1
    (row,) = rows
    assert row["position"] > 0
    del row["position"]
    assert row == {
        "victim": "team-a/a-3",
        "preemptor": "team-b/b-4",
        "preemptor_kind": "pod",
        "rule": "ElasticQuota:borrowed",
        "victim_priority": 200,
        "preemptor_priority": 100,
        "preemptor_class": "p100",
        "preemptor_phase": "Bound",
        "quota": "quota-b",
        "quota_used": 3,
        "quota_min": 6,
        "quota_max": 8,
        "quota_request": 3,
        "victim_quota": "quota-a",
        "victim_quota_used": 6,
        "used_from_log": 3,  # the recorded state agrees with the log's own accounting
    }
    assert verify_replay(database).mismatches == []


def test_thrash_is_detectable_and_victim_recreated(database: Database) -> None:
    _run(database, "thrash-controller-pod-preempted-twice")
    with database.connect() as conn:
        thrash = [tuple(r) for r in conn.execute("SELECT pod, preemptions_in_10m FROM v_thrash")]
        # every preemption of web is followed by the controller's PodCreated with a fresh uid
        log = [
            tuple(r)
            for r in conn.execute(
                "SELECT type, coalesce(meta->>'actor', ''), data->'object'->'metadata'->>'uid' "
                "FROM events WHERE stream IN ('pod/default/web', 'sched/pod/default/web') "
                "AND type IN ('PodCreated', 'PodPreempted') ORDER BY position"
            )
        ]
    assert thrash == [("default/web", 2)]
    assert [(t, a) for t, a, _ in log] == [
        ("PodCreated", "scenario"),
        ("PodPreempted", "scenario"),
        ("PodCreated", "controller"),
        ("PodPreempted", "scenario"),
        ("PodCreated", "controller"),
    ]
    uids = [u for t, _, u in log if t == "PodCreated"]
    assert len(set(uids)) == 3
    assert verify_replay(database).mismatches == []
