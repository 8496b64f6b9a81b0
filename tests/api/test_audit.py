"""The audit trail on a real ledger: explain (incl. --at), history, views, replay, what-if."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import psycopg
import pytest

from api.services.explain import explain, render_explain
from api.services.history import history
from api.services.replay import verify_replay
from api.services.simulate import Simulation
from api.services.state import state_at
from api.services.whatif import whatif
from ledger import store
from ledger.store import NewEvent

ROOT = Path(__file__).resolve().parents[2]


def node(name: str, cpu: str, rack: str = "r1") -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"rack": rack}},
        "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": 110}},
    }


def pod(name: str, cpu: str, group: str | None = None) -> dict:
    spec: dict = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def gang(name: str, n: int, key: str | None = None) -> dict:
    spec: dict = {"schedulingPolicy": {"gang": {"minCount": n}}}
    if key:
        spec["schedulingConstraints"] = {"topology": [{"key": key}]}
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": spec,
    }


QUOTA = {
    "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
    "kind": "ElasticQuota",
    "metadata": {"name": "q", "namespace": "default"},
    "spec": {"min": {"cpu": "16"}, "max": {"cpu": "32"}},
}

STEPS = [
    {"apply": [node("n1", "4"), QUOTA, gang("trio", 3), pod("t-1", "1", "trio"), pod("t-2", "1", "trio")]},
    {"advance": "60s"},
    {"apply": [pod("t-3", "1", "trio")]},
    {"apply": [gang("big", 2), pod("b-1", "2", "big"), pod("b-2", "2", "big")]},
    {"advance": "30s"},
]


@pytest.fixture()
def story(database):
    """Runs STEPS on the test database; returns (database, positions after each step)."""
    sim = Simulation(database, {}, "audit-story")
    marks = []
    for step in STEPS:
        sim.run([step])
        with database.connect() as c:
            marks.append(store.head(c))
    return database, marks


def test_explain_gated_scheduled_and_unschedulable_at_positions(story):
    database, marks = story
    gated = explain(database, "podgroup", "default", "trio", at=marks[0])
    assert gated["verdict"].startswith("Waiting (not attempted)")
    assert "waiting for minCount pods from a gang to appear in scheduling queue" in gated["verdict"]
    assert {g["pod"] for g in gated["gates"]} == {"default/t-1", "default/t-2"}
    assert gated["attempts"] == 0

    scheduled = explain(database, "pg", "default", "trio", at=marks[2])
    assert scheduled["verdict"] == "Scheduled (3/3 pods bound)"
    assert scheduled["condition"]["status"] == "True" and scheduled["gates"] == []
    assert {p["node"] for p in scheduled["pods"]} == {"n1"}

    before_big = explain(database, "pod", "default", "t-3", at=marks[2])
    assert before_big["verdict"] == "Scheduled on n1"

    big = explain(database, "podgroup", "default", "big")
    assert big["verdict"].startswith("Unschedulable: ")
    assert "minCount (2) cannot be satisfied" in big["verdict"]
    assert big["attempts"] >= 2  # retried after backoff within the 30 s advance
    assert any("NodeResourcesFit" in r for r in big["reasons"])
    assert big["quota"]["name"] == "q" and big["quota"]["used"]["cpu"] == 3000
    text = render_explain(big)
    assert "Verdict:   Unschedulable" in text and "Quota q" in text
    with_nodes = explain(database, "podgroup", "default", "big", nodes=True)
    rows = {(r["pod"], r["node"]): r for r in with_nodes["nodes"]}
    assert rows[("default/b-1", "n1")]["fits"] is False
    assert rows[("default/b-1", "n1")]["reasons"] == ["Insufficient cpu"]


def test_history_is_a_timeline_with_relative_times(story):
    database, _ = story
    rows = history(database, "podgroup", "default", "trio")
    types = [r["type"] for r in rows]
    assert types[0] == "PodGroupCreated"
    assert "PodGroupScheduled" in types and "PodGroupConditionChanged" in types
    assert rows[0]["relative"] == "+0s"
    assert rows[-1]["relative"] == "+1m00s"


def test_state_at_three_positions(story):
    database, marks = story

    def bound(pos: int) -> set[str]:
        st = state_at(database, pos)
        return {
            o["name"] for o in st["objects"] if o["kind"] == "Pod" and o["status"].get("phase") == "Bound"
        }

    assert bound(marks[0]) == set()
    assert bound(marks[2]) == {"t-1", "t-2", "t-3"}
    assert bound(marks[4]) == {"t-1", "t-2", "t-3"}
    assert {o["name"] for o in state_at(database, marks[0])["objects"] if o["kind"] == "Pod"} == {
        "t-1",
        "t-2",
    }


def test_reporting_views_with_numbers(story):
    database, _ = story
    with database.connect() as c:
        waits = {
            r[0]: (r[1], r[2])
            for r in c.execute("SELECT name, wait_seconds, scheduled FROM v_group_wait_times")
        }
        assert waits["trio"] == (60.0, True)
        assert waits["big"][1] is False
        reasons = c.execute("SELECT plugin, sum(attempts) FROM v_unschedulable_reasons GROUP BY 1").fetchall()
        by_plugin = dict(reasons)
        assert by_plugin.get("NodeResourcesFit", 0) >= 2
        util = c.execute(
            "SELECT cpu_used_milli, pods, cpu_allocatable_milli, cpu_fraction FROM v_node_utilization "
            "WHERE node = 'n1' ORDER BY position DESC LIMIT 1"
        ).fetchone()
        assert tuple(util) == (3000, 3, 4000, pytest.approx(0.75))
        quota = c.execute(
            "SELECT cpu_used_milli, cpu_min_milli, cpu_max_milli FROM v_quota_usage "
            "WHERE namespace = 'default' ORDER BY position DESC LIMIT 1"
        ).fetchone()
        assert tuple(quota) == (3000, 16000, 32000)


def test_preemption_and_thrash_views(conn):
    # Decision events as a scheduler writes them: a pod bound and preempted three times.
    def bound(t: str) -> NewEvent:
        return NewEvent(
            "sched/pod/default/v",
            "PodBound",
            {"pod": "default/v", "node": "n1", "requests": {"cpu": 500}},
            effective_at=datetime.fromisoformat(f"2026-01-01T00:{t}+00:00"),
        )

    def preempted(t: str) -> NewEvent:
        data = {
            "victim": "default/v",
            "preemptor": "default/pg-hi",
            "preemptor_kind": "podgroup",
            "node": "n1",
            "rule": "WorkloadAwarePreemption",
            "unit": "default/v",
            "disruption_mode": "Single",
            "victim_priority": 10,
            "preemptor_priority": 100,
            "requests": {"cpu": 500},
        }
        return NewEvent(
            "sched/pod/default/v",
            "PodPreempted",
            data,
            effective_at=datetime.fromisoformat(f"2026-01-01T00:{t}+00:00"),
        )

    ev = [
        bound("00:00"),
        preempted("00:03"),
        bound("00:05"),
        preempted("00:09"),
        bound("30:00"),
        preempted("35:00"),
    ]
    store.append(conn, ev)
    pre = conn.execute(
        "SELECT victim, preemptor, rule, victim_priority, preemptor_priority FROM v_preemptions"
    ).fetchall()
    assert len(pre) == 3 and tuple(pre[0]) == (
        "default/v",
        "default/pg-hi",
        "WorkloadAwarePreemption",
        10,
        100,
    )
    thrash = conn.execute("SELECT pod, preemptions_in_10m FROM v_thrash").fetchall()
    assert [tuple(r) for r in thrash] == [("default/v", 2)]
    changes = conn.execute("SELECT sum(cpu_milli), sum(pods) FROM v_pod_allocation_changes").fetchone()
    assert tuple(changes) == (0, 0)  # three binds, each ended by a preemption


def test_reporting_role_reads_views_only(story):
    database, _ = story
    from ledger import db

    # The reporting role logs in itself (the application login is no member of it).
    url = db.with_login(database.url, "podledger_reporting", None)
    with psycopg.connect(url) as c:
        assert c.execute("SELECT count(*) FROM v_group_wait_times").fetchone() == (2,)
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied"):
            c.execute("SELECT count(*) FROM events")
        c.rollback()


def test_replay_verify_has_no_mismatches(story):
    database, _ = story
    rep = verify_replay(database)
    assert rep.ok, rep.mismatches
    assert rep.runs >= 4 and rep.cycles >= 4


def test_replay_verify_detects_a_forged_decision(story, db_url):
    database, _ = story
    with psycopg.connect(db_url, autocommit=True) as su:
        su.execute("SET session_replication_role = replica")
        su.execute(
            "UPDATE events SET data = jsonb_set(data, '{node}', '\"n9\"') WHERE position = "
            "(SELECT min(position) FROM events WHERE type = 'PodBound')"
        )
    rep = verify_replay(database)
    assert not rep.ok
    assert rep.mismatches[0]["recorded"][2]["node"] == "n9"


def test_whatif_without_topology_changes_an_outcome(database):
    steps = [
        {
            "apply": [
                node("a1", "2", "ra"),
                node("b1", "2", "rb"),
                gang("wide", 2, "rack"),
                pod("w-1", "2", "wide"),
                pod("w-2", "2", "wide"),
            ]
        }
    ]
    Simulation(database, {}, "whatif").run(steps)
    assert explain(database, "podgroup", "default", "wide")["verdict"].startswith("Unschedulable")
    diff = whatif(database, {"featureGates": {"TopologyAwareWorkloadScheduling": False}})
    changed = {c["group"]: c for c in diff["changed"]}
    assert changed["default/wide"]["before"]["status"] == "False"
    assert changed["default/wide"]["after"]["status"] == "True"
    assert changed["default/wide"]["outcomeChanged"] is True


def test_cli_explain_history_replay(story, tmp_path):
    database, marks = story
    env = dict(os.environ)
    bin_ = str(Path(sys.executable).parent / "podledger")

    def cli(*a: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([bin_, *a], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)

    res = cli("explain", "podgroup", "default/trio", "--at", str(marks[0]))
    assert res.returncode == 0 and "Waiting (not attempted)" in res.stdout
    assert "minCount (2) cannot be satisfied" in cli("explain", "podgroup", "default/big").stdout
    assert "PodGroupScheduled" in cli("history", "podgroup", "default/trio").stdout
    ver = cli("replay", "--verify")
    assert ver.returncode == 0 and "0 mismatches" in ver.stdout
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(
        "apiVersion: podledger.io/v1alpha1\nkind: SchedulerConfig\nmetadata: {name: x}\n"
        "spec: {backoff: {initialSeconds: 5, maxSeconds: 5}}\n"
    )
    assert cli("replay", "--config", str(cfg), "--diff").returncode == 0
    assert cli("explain", "podgroup", "default/nope").returncode == 1


def _pc(name: str, value: int) -> dict:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def test_explain_preempted_victim_and_preemptor(database):
    low = pod("blocker", "4")
    low["spec"]["priorityClassName"] = "low"
    hi = [pod(f"h-{i}", "2", "urgent") for i in range(2)]
    for p in hi:
        p["spec"]["priorityClassName"] = "high"
    urgent = gang("urgent", 2)
    urgent["spec"]["priorityClassName"] = "high"
    steps = [
        {"apply": [_pc("low", 10), _pc("high", 100), node("n1", "4"), low]},
        {"apply": [urgent, *hi]},
        {"advance": "30s"},
    ]
    Simulation(database, {}, "preempt").run(steps)
    victim = explain(database, "pod", "default", "blocker")
    assert victim["verdict"] == "Preempted by default/urgent"
    group = explain(database, "podgroup", "default", "urgent")
    assert group["preemption"]["taken"] is True
    assert [v["victim"] for v in group["preemption"]["victims"]] == ["default/blocker"]
    assert group["verdict"] == "Scheduled (2/2 pods bound)"
    text = render_explain(group)
    assert "Preemption: taken, 1 victim(s): default/blocker on n1" in text
    assert verify_replay(database).ok
