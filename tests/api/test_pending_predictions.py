"""The predicted start in v_pending_now (issue 34): the table ``pending_predictions`` (derived
data, migration 0031) filled by ``api.services.pending_predictions.refresh`` with explain's
estimator as of one position; the view shows it for what is still pending, NULL otherwise."""

from __future__ import annotations

from datetime import timedelta

import pytest

from api.services.explain import explain
from api.services.pending_predictions import refresh, worker_refresh
from api.services.simulate import Simulation
from ledger.sql import dicts, scalar
from tests.api.test_reason_views import node, pod

GANG = {
    "apiVersion": "scheduling.k8s.io/v1beta1",
    "kind": "PodGroup",
    "metadata": {"name": "gang"},
    "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
}
STEPS: list[dict] = [{"apply": [node("n1", "r1", "4")]}]
for i in range(5):  # five pods that each hold the whole node for 100 s
    STEPS += [
        {"apply": [pod(f"a{i}", "4")]},
        {"advance": "100s"},
        {"delete": [{"kind": "Pod", "name": f"a{i}"}]},
    ]
STEPS += [
    {"apply": [pod("holder", "4")]},
    {"advance": "40s"},
    {"apply": [GANG, pod("g-0", "2", group="gang"), pod("g-1", "2", group="gang")]},
    {"advance": "5s"},
    {"apply": [pod("waiter", "4")]},
    {"advance": "5s"},
]
PREDICTED = (
    'SELECT kind, name, "group", queue_position, predicted_start_p50, predicted_start_p90, prediction_cases, '
    "predicted_as_of_position, predicted_as_of FROM v_pending_now ORDER BY queue_position, kind DESC, name"
)


@pytest.fixture()
def cluster(database):
    Simulation(database, {}, "pending-predictions").run(STEPS)
    return database


def view(database) -> dict[tuple[str, str], dict]:
    with database.connect() as c:
        return {(r["kind"], r["name"]): r for r in dicts(c, PREDICTED)}


def test_a_refresh_gives_v_pending_now_explains_prediction_at_that_position(cluster):
    before = view(cluster)
    assert set(before) == {("PodGroup", "gang"), ("Pod", "g-0"), ("Pod", "g-1"), ("Pod", "waiter")}
    assert all(
        r["predicted_as_of_position"] is None and r["predicted_start_p50"] is None for r in before.values()
    )

    done = refresh(cluster)
    with cluster.connect() as c:
        head = scalar(c, "SELECT max(position) FROM events")
    assert (done.position, done.pending, done.rows) == (head, 2, 2)
    assert done.entities == [("PodGroup", "default", "gang"), ("Pod", "default", "waiter")]
    after = view(cluster)
    for kind, name in (("PodGroup", "gang"), ("Pod", "waiter")):
        row = after[(kind, name)]
        p = explain(cluster, kind, "default", name, at=row["predicted_as_of_position"])["predictedStart"]
        assert row["predicted_as_of_position"] == head and row["predicted_as_of"].isoformat() == p["as_of"]
        assert p["p50_seconds"] is not None and p["p90_seconds"] is not None
        assert row["predicted_start_p50"] == row["predicted_as_of"] + timedelta(seconds=p["p50_seconds"])
        assert row["predicted_start_p90"] == row["predicted_as_of"] + timedelta(seconds=p["p90_seconds"])
        assert row["prediction_cases"] == p["cases"] == 5
    # the gang starts when the holder ends; the waiter needs the whole node after the gang
    assert (
        after[("PodGroup", "gang")]["predicted_start_p50"] < after[("Pod", "waiter")]["predicted_start_p50"]
    )
    for member in ("g-0", "g-1"):  # a member pod carries its group's
        assert {k: v for k, v in after[("Pod", member)].items() if k.startswith("predict")} == {
            k: v for k, v in after[("PodGroup", "gang")].items() if k.startswith("predict")
        }
    with cluster.connect() as c:
        stored = dicts(
            c, "SELECT kind, name, holders, queue_ahead, censored FROM pending_predictions ORDER BY 1, 2"
        )
    assert [(r["kind"], r["name"], r["holders"], r["queue_ahead"]) for r in stored] == [
        ("Pod", "waiter", 1, 1),
        ("PodGroup", "gang", 1, 0),
    ]


def test_the_shared_reads_give_what_one_prediction_at_a_time_gives(cluster):
    stored = "SELECT * FROM pending_predictions ORDER BY kind, name"

    def rows() -> list[dict]:
        with cluster.connect() as c:
            return [{k: v for k, v in r.items() if k != "computed_at"} for r in dicts(c, stored)]

    refresh(cluster)
    shared = rows()
    refresh(cluster, shared_reads=False)
    assert rows() == shared and len(shared) == 2


def test_an_entity_bound_since_is_not_shown_and_the_next_refresh_drops_its_row(cluster):
    first = refresh(cluster)
    Simulation(cluster, {}, "holder-ends").run([{"delete": [{"kind": "Pod", "name": "holder"}]}])
    shown = view(cluster)
    assert ("PodGroup", "gang") not in shown and ("Pod", "g-0") not in shown  # bound: not pending
    assert ("Pod", "holder") not in shown
    # the waiter's stored prediction is still the one made as of the first refresh's position
    assert shown[("Pod", "waiter")]["predicted_as_of_position"] == first.position
    with cluster.connect() as c:
        assert scalar(c, "SELECT count(*) FROM pending_predictions WHERE name = 'gang'") == 1
    second = refresh(cluster)
    assert second.position > first.position and second.entities == [("Pod", "default", "waiter")]
    with cluster.connect() as c:
        names = [r["name"] for r in dicts(c, "SELECT name, as_of_position FROM pending_predictions")]
        assert names == ["waiter"]
        assert scalar(c, "SELECT as_of_position FROM pending_predictions") == second.position
    assert view(cluster)[("Pod", "waiter")]["predicted_as_of_position"] == second.position


def test_an_emptied_table_shows_nulls_and_a_refresh_refills_it(cluster):
    refresh(cluster)
    with cluster.transaction() as c:
        c.execute("DELETE FROM pending_predictions")  # derived data: rebuilt by the next refresh
    rows = view(cluster)
    assert len(rows) == 4
    assert all(v is None for r in rows.values() for k, v in r.items() if k.startswith("predict"))
    assert refresh(cluster).rows == 2
    assert all(r["predicted_start_p50"] is not None for r in view(cluster).values())


def test_the_limit_takes_the_first_in_queue_order(cluster):
    done = refresh(cluster, limit=1)
    assert (done.pending, done.rows, done.entities) == (2, 1, [("PodGroup", "default", "gang")])
    rows = view(cluster)
    assert rows[("PodGroup", "gang")]["predicted_start_p50"] is not None
    assert rows[("Pod", "waiter")]["predicted_as_of_position"] is None


def test_the_time_budget_stops_starting_predictions(cluster):
    done = refresh(cluster, budget=0.0)  # the first is always predicted, then the budget is spent
    assert (done.rows, done.cut) == (1, 1)
    rows = view(cluster)
    assert rows[("PodGroup", "gang")]["predicted_start_p50"] is not None
    assert rows[("Pod", "waiter")]["predicted_as_of_position"] is None


def test_the_worker_refresh_runs_only_when_the_log_moved(cluster):
    first = worker_refresh(cluster)
    assert first is not None and first["predicted"] == 2 and first["pending"] == 2
    assert worker_refresh(cluster) is None  # already as of the head
    Simulation(cluster, {}, "late-arrival").run([{"apply": [pod("late", "4")]}])
    again = worker_refresh(cluster)
    assert again is not None and again["position"] > first["position"] and again["pending"] == 3


def test_the_app_login_may_replace_the_rows_and_nothing_more(cluster):
    with cluster.connect() as c:
        assert scalar(c, "SELECT current_user") == "podledger_app"  # the refreshes above ran as it

        def can(role: str, what: str, on: str = "pending_predictions") -> bool:
            return bool(scalar(c, "SELECT has_table_privilege(%s, %s, %s)", (role, on, what)))

        assert all(can("podledger_app", w) for w in ("SELECT", "INSERT", "DELETE"))
        assert not any(can("podledger_app", w) for w in ("UPDATE", "TRUNCATE", "REFERENCES", "TRIGGER"))
        assert not can("podledger_reporting", "SELECT")  # through the view only
        assert can("podledger_reporting", "SELECT", "v_pending_now")
        assert can("podledger_app", "SELECT", "v_pending_now")
        assert not can("podledger_app", "UPDATE", "events") and not can("podledger_app", "DELETE", "events")


def test_the_worker_refreshes_after_a_tick_that_scheduled(cluster, db_url, capsys):
    """Driven by hand: the job's runs are called directly, its next run time read, no clock raced."""
    import json
    import time
    from datetime import UTC, datetime

    from apscheduler.schedulers.background import BackgroundScheduler

    from scheduler.edge.worker import Worker

    worker = Worker(cluster, db_url, name="predicting", predictions=worker_refresh, predict_interval=30.0)
    sched = BackgroundScheduler(timezone=UTC)
    sched.start(paused=True)  # jobs are planned, none runs
    assert worker._loop.leader.try_lead()
    try:
        worker._sched = sched
        worker._schedule_predictions()
        job = sched.get_job("predictions")
        assert job.trigger.interval.total_seconds() == 30 and job.max_instances == 1
        later = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=1)
        job.modify(next_run_time=later)

        worker.refresh_predictions()  # what the job runs
        lines = [json.loads(x) for x in capsys.readouterr().err.splitlines() if x.startswith("{")]
        assert [(x["event"], x["predicted"], x["pending"]) for x in lines] == [("predictions", 2, 2)]
        worker.refresh_predictions()  # the log has not moved: nothing done, nothing logged
        assert capsys.readouterr().err == ""

        worker.wake_predictions()  # refreshed less than an interval ago: left to its interval
        assert sched.get_job("predictions").next_run_time == later
        worker._predicted_at = time.monotonic() - 31  # the last refresh started an interval ago
        worker.tick()  # the worker's scheduler retries the pending entities (their backoff is over)
        with cluster.connect() as c:
            head = scalar(c, "SELECT max(position) FROM events")
            retried = scalar(c, "SELECT count(*) FROM events WHERE meta->>'actor' = 'predicting'")
        assert retried > 0 and worker._bridge is not None and worker._bridge.position == head
        assert sched.get_job("predictions").next_run_time < later  # woken: due now
        worker.refresh_predictions()
        with cluster.connect() as c:
            assert scalar(c, "SELECT min(as_of_position) FROM pending_predictions") == head
    finally:
        sched.shutdown(wait=False)
        worker._loop.leader.release()


def test_the_cli_refreshes_on_demand_with_progress(cluster):
    from tests.api.test_cli import cli

    res = cli("predictions", "refresh", "--limit", "1")
    assert res.returncode == 0, res.stderr
    with cluster.connect() as c:
        head = scalar(c, "SELECT max(position) FROM events")
    assert res.stdout.startswith(
        f"predictions: 1 stored as of position {head} (2 pending, 1 beyond the limit not predicted) in "
    )
    assert "  1/1 PodGroup default/gang: Predicted: starts in " in res.stderr
    assert view(cluster)[("PodGroup", "gang")]["predicted_as_of_position"] == head
    assert cli("predictions", "refresh", "--limit", "-1").returncode == 1


def test_the_migration_goes_down_and_up_with_the_views_grants(cluster, db_url):
    import psycopg

    from alembic import command
    from ledger import db

    def columns_and_readers() -> tuple[list[str], set[str]]:
        with psycopg.connect(db.libpq_url(db_url)) as c:
            cols = [
                r[0]
                for r in c.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_name = 'v_pending_now' "
                    "ORDER BY ordinal_position"
                )
            ]
            readers = {
                r[0]
                for r in c.execute(
                    "SELECT grantee FROM information_schema.role_table_grants "
                    "WHERE table_name = 'v_pending_now' AND privilege_type = 'SELECT'"
                )
            }
            return cols, readers

    refresh(cluster)
    cols, readers = columns_and_readers()
    new = ["predicted_start_p50", "predicted_start_p90", "prediction_cases", "predicted_as_of_position"]
    assert cols[-5:] == [*new, "predicted_as_of"]
    db.dispose_all()
    cfg = db.alembic_config(db_url)
    command.downgrade(cfg, "0029")
    old_cols, old_readers = columns_and_readers()
    assert old_cols == cols[:-5] and old_readers == readers >= {"podledger_app", "podledger_reporting"}
    with psycopg.connect(db.libpq_url(db_url)) as c:
        assert c.execute("SELECT to_regclass('pending_predictions')").fetchone() == (None,)
    command.upgrade(cfg, "head")
    assert columns_and_readers() == (cols, readers)
