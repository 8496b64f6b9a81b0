"""Retry compaction (issue 14 item 3): a retry that changes nothing is one small event, and every
reader (explain, history, Kubernetes Events, the views, metrics, replay --verify) gives the same
attempts, waits and reasons as a log that records every retry in full."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from api.k8s import events as k8s_events
from api.services.explain import explain
from api.services.history import history
from api.services.replay import verify_replay
from bench.retries import NS, run
from ledger import db
from ledger.queries import reports as reports_q
from tests.conftest import _admin, new_database

PODS = 150
MINUTES = 10


@pytest.fixture()
def full_database(server_url: str):
    """A second database whose scheduler records every retry in full (the behaviour before)."""
    url = new_database(server_url)
    yield db.get_database(url, migrate_on_start=False)
    db.dispose_all()
    with psycopg.connect(_admin(server_url), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{db.database_name(url)}" WITH (FORCE)')


@pytest.fixture()
def runs(database, full_database):
    return (database, run(database, PODS, MINUTES)), (
        full_database,
        run(full_database, PODS, MINUTES, compact=False),
    )


def test_an_unchanged_retry_is_one_small_event(runs):
    (_, new), (_, old) = runs
    assert new["retries"] == old["retries"] > PODS  # every pod flushed at least once, the gang backs off
    assert new["events"] == new["retries"], new  # one event per retry
    assert set(new["types"]) == {"PodRetried", "PodGroupRetried"}, new["types"]
    assert new["types"]["PodRetried"] == PODS * 2  # flushed from the unschedulable pool every 5 min
    assert new["max_bytes"] <= 100, new
    assert old["events"] >= 3 * old["retries"]  # verdict + requeue + cycle summary (+ members)


def _views(database) -> dict[str, Any]:
    with database.connect() as c:
        pending = c.execute(
            "SELECT kind, name, pending_pods, queue_position, last_codes, last_reason_code, last_message, "
            "last_attempt_at, waiting_since FROM v_pending_now ORDER BY kind, name"
        ).fetchall()
        reasons = c.execute("SELECT * FROM v_unschedulable_reasons ORDER BY plugin, reason").fetchall()
        waits = c.execute(
            "SELECT namespace, name, created_at, scheduled_at FROM v_group_wait_times ORDER BY name"
        ).fetchall()
        status = c.execute(
            "SELECT kind, name, status FROM objects WHERE namespace = %(n)s ORDER BY kind, name", {"n": NS}
        ).fetchall()
        cycles: dict[str | None, int] = {}
        for _, typ, result in reports_q.counted_events_after(c, 0, limit=1_000_000):
            if typ == "SchedulingCycleCompleted":
                cycles[result] = cycles.get(result, 0) + 1
        k8s = [
            (e["kind"], e["name"], e["reason"], e["message"], e["count"], e["first"], e["last"])
            for e in k8s_events.derive(c, 10**12, NS)
        ]
    return {
        "pending": pending,
        "reasons": reasons,
        "waits": waits,
        "status": status,
        "cycles": cycles,
        "k8s": k8s,
    }


def _explain(database, kind: str, name: str) -> dict[str, Any]:
    doc = explain(database, kind, NS, name)
    last = doc["lastAttempt"] or {}
    data = {k: v for k, v in (last.get("data") or {}).items() if k not in ("retried_at", "group")}
    return {
        "verdict": doc["verdict"],
        "reasons": doc["reasons"],
        "codes": doc["codes"],
        "why": doc["why"],
        "attempts": doc["attempts"],
        "at": last.get("at"),
        "message": data.get("message"),
        "diagnosis": data.get("diagnosis"),
        "condition": doc["condition"],
    }


def test_readers_give_the_same_answers_as_full_recording(runs):
    (eng, _), (full, _) = runs
    a, b = _views(eng), _views(full)
    for key in a:
        assert a[key] == b[key], key
    assert a["pending"] and a["k8s"] and a["reasons"]
    for kind, name in (("PodGroup", "gang"), ("Pod", "p-00007"), ("Pod", "gang-1")):
        assert _explain(eng, kind, name) == _explain(full, kind, name), (kind, name)
    assert _explain(eng, "PodGroup", "gang")["attempts"] > 10


def test_history_names_each_retry(runs):
    (eng, _), _ = runs
    lines = [e for e in history(eng, "Pod", NS, "p-00003") if e["type"] == "PodRetried"]
    assert len(lines) == 2
    assert "same verdict as position" in lines[0]["summary"] and "attempt 2" in lines[0]["summary"]


def test_replay_verify_reproduces_the_compacted_log(runs):
    (eng, new), _ = runs
    rep = verify_replay(eng)
    assert rep.ok, rep.mismatches[:3]
    assert rep.cycles >= new["retries"]
