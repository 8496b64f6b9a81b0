"""The Grafana dashboard (deploy/grafana/dashboards/podledger.json): every panel's SQL runs, as
the reporting role Grafana logs in with, against a migrated database holding a small GPU
cluster's log; the issue-21 views each have a panel (issue 21)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import psycopg
import pytest

from api.services.simulate import Simulation
from ledger import db
from ledger.sql import rows, scalar
from tests.api.test_reason_views import STEPS

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "dashboards" / "podledger.json"
INTERVALS = {"1m": "minute", "1h": "hour", "1d": "day"}


def expand_macros(sql: str) -> str:
    """The Grafana PostgreSQL macros the panels use, as Grafana expands them for a time range
    that covers the simulated log (its virtual clock starts on 2026-01-01)."""
    sql = re.sub(
        r"\$__timeFilter\((\w+)\)",
        lambda m: f"{m[1]} BETWEEN '2025-12-01T00:00:00Z' AND now() + interval '1 day'",
        sql,
    )
    sql = re.sub(
        r"\$__timeGroupAlias\((\w+),\s*'(\w+)'\)",
        lambda m: f"date_trunc('{INTERVALS[m[2]]}', {m[1]}) AS \"time\"",
        sql,
    )
    sql = sql.replace("$__timeFrom()", "'2025-12-01T00:00:00Z'::timestamptz").replace(
        "$__timeTo()", "now() + interval '1 day'"
    )
    # template variables (issue 34), as Grafana expands "All"
    sql = sql.replace(
        "($namespace)", "(SELECT namespace FROM v_pending_hourly UNION SELECT namespace FROM v_waits)"
    )
    sql = sql.replace("($quota)", "(SELECT quota FROM v_waits UNION SELECT '')")
    assert "$__" not in sql and "$" not in sql.replace("$$", ""), f"a macro the test does not expand: {sql}"
    return sql


def panels() -> list[dict]:
    return json.loads(DASHBOARD.read_text())["panels"]


def test_each_new_view_has_a_panel():
    sql = "\n".join(t["rawSql"] for p in panels() for t in p["targets"])
    for view in ("v_pending_now", "v_idle_capacity", "v_gpu_allocation", "v_unschedulable_reasons"):
        assert f"FROM {view}" in sql, view
    ids = [p["id"] for p in panels()]
    assert len(ids) == len(set(ids)), "panel ids are unique"


@pytest.fixture()
def gpu_cluster(database):
    Simulation(database, {}, "grafana-panels").run(
        [
            *STEPS,
            # a GPU pod that fits, so the GPU allocation has a bind to show
            {"apply": [_gpu_pod("one-gpu", 2)]},
            {"advance": "5s"},
        ]
    )
    return database


def _gpu_pod(name: str, gpus: int) -> dict:
    req = {"cpu": "1", "nvidia.com/gpu": gpus}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "resources": {"requests": req, "limits": dict(req)}}]},
    }


def test_every_panel_query_runs_as_the_reporting_role(gpu_cluster):
    """Grafana's datasource logs in as podledger_reporting (deploy/grafana/provisioning)."""
    url = db.with_login(gpu_cluster.url, "podledger_reporting", None)
    counts: dict[str, int] = {}
    with psycopg.connect(url) as conn:
        for p in panels():
            for t in p["targets"]:
                counts[p["title"]] = len(conn.execute(expand_macros(t["rawSql"])).fetchall())
    by_view = {
        view: [t for p in panels() for t in [p["title"]] if any(view in x["rawSql"] for x in p["targets"])]
        for view in ("v_pending_now", "v_idle_capacity", "v_gpu_allocation", "v_unschedulable_reasons")
    }
    for view, titles in by_view.items():
        assert titles and all(counts[t] > 0 for t in titles), (view, {t: counts[t] for t in titles})


def test_gpu_allocation_over_time(gpu_cluster):
    with gpu_cluster.connect() as conn:
        found = rows(
            conn,
            "SELECT pod, gpus_delta, gpus_allocated, namespace_gpus_allocated, gpus_allocatable, gpu_fraction "
            "FROM v_gpu_allocation ORDER BY position",
        )
        grants = [
            scalar(conn, "SELECT has_table_privilege(%(r)s, 'v_gpu_allocation', 'SELECT')", {"r": role})
            for role in ("podledger_reporting", "podledger_app")
        ]
    assert grants == [True, True]
    # the gang stays pending (3 GPUs per pod, one 3-GPU slot per rack ... see test_reason_views);
    # the 2-GPU pod binds: 2 of the 8 GPUs the two GPU nodes offer
    assert [(r.pod, r.gpus_delta, r.gpus_allocated, r.namespace_gpus_allocated) for r in found] == [
        ("default/one-gpu", 2, 2, 2)
    ]
    assert found[0].gpus_allocatable == 8 and float(found[0].gpu_fraction) == 0.25


def test_variables_links_annotations_and_steps(gpu_cluster):
    """Issue 34: template variables (cluster, namespace, quota), data links to the group pages,
    annotations for preemptions and node changes (their SQL runs as the reporting role), step
    interpolation on every time series, and the new series."""
    doc = json.loads(DASHBOARD.read_text())
    assert {v["name"] for v in doc["templating"]["list"]} >= {
        "cluster",
        "namespace",
        "quota",
        "podledger_url",
    }
    links = [
        link["url"]
        for p in panels()
        for link in (p.get("fieldConfig") or {}).get("defaults", {}).get("links", [])
    ]
    assert links and all(u.startswith("${podledger_url}/groups/") for u in links)
    assert all(
        p["fieldConfig"]["defaults"]["custom"]["lineInterpolation"] == "stepAfter"
        for p in panels()
        if p["type"] == "timeseries"
    )
    sql = "\n".join(t["rawSql"] for p in panels() for t in p["targets"])
    for view in ("v_waits", "v_pending_hourly", "v_allocation_hourly", "analytics_unschedulable"):
        assert view in sql, view
    names = {a["name"] for a in doc["annotations"]["list"]}
    assert names == {"Preemptions", "Node changes"}
    url = db.with_login(gpu_cluster.url, "podledger_reporting", None)
    with psycopg.connect(url) as conn:
        counts = {
            a["name"]: len(conn.execute(expand_macros(a["target"]["rawSql"])).fetchall())
            for a in doc["annotations"]["list"]
        }
    assert counts["Node changes"] >= 3
