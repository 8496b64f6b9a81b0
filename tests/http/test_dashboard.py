"""The dashboard's pages as HTML (the browser test drives the same pages in chromium)."""

from __future__ import annotations

import re

import pytest

from api.http.auth import COOKIE
from tests.http.conftest import TOKENS


@pytest.fixture()
def signed_in(demo_client):  # type: ignore[no-untyped-def]
    demo_client.cookies.set(COOKIE, TOKENS["reader"])
    yield demo_client
    demo_client.cookies.clear()


def group_names(html: str) -> list[str]:
    return re.findall(r'class="group-link" href="[^"]+">([^<]+)</a>', html)


def test_groups_table_with_conditions_wait_times_and_filters(signed_in, demo_database):
    from markupsafe import escape

    from api.services.objects import list_objects

    html = signed_in.get("/").text
    names = group_names(html)
    assert {"llm-pretrain", "resnet-finetune", "bert-sweep", "pipeline-1", "giant"} <= set(names)
    with demo_database.connect() as conn:
        (giant,) = list_objects(conn, "PodGroup", "team-a", "giant")
    (cond,) = [c for c in giant.status["conditions"] if c["type"] == "PodGroupInitiallyScheduled"]
    assert cond["status"] == "False" and cond["message"]
    assert f'<td class="msg">{escape(cond["message"])}</td>' in html
    assert re.search(r"\d+(\.\d+)?(ms|s) <small>waiting</small>", html)  # giant is still waiting
    assert group_names(signed_in.get("/?state=unschedulable").text) == ["giant", "vision-pretrain"]
    assert group_names(signed_in.get("/?q=pipeline").text) == [
        "pipeline-1",
        "pipeline-1-decode",
        "pipeline-1-prefill",
    ]
    assert "No groups match." in signed_in.get("/?q=nothing-like-this").text
    assert html.count("<svg") == 2


def test_group_page_and_composite_page(signed_in):
    html = signed_in.get("/groups/team-a/llm-pretrain").text
    assert 'id="explanation"' in html and "llm-pretrain" in html
    assert html.count("node-r4-") >= 4  # where its pods are
    assert "<svg" in html and 'class="point"' in html
    cpg = signed_in.get("/groups/team-b/pipeline-1?kind=composite").text
    assert "CompositePodGroup team-b/pipeline-1" in cpg and 'href="/groups/team-b/pipeline-1-decode"' in cpg
    missing = signed_in.get("/groups/team-a/nope")
    assert missing.status_code == 404 and "does not exist" in missing.text


def test_charts_page_draws_every_chart_from_the_data(signed_in):
    html = signed_in.get("/charts").text
    assert html.count("<svg") == 11  # 6 charts and 5 plots over time (issue 34)
    for title in (
        "Group wait time distribution",
        "Unschedulable reasons over time",
        "Preemptions over time, by rule",
        "Node utilization (requested / allocatable)",
        "Quota utilization (used / max; tick = min)",
    ):
        assert f'aria-label="{title}"' in html
    assert "node-r4-1 nvidia.com/gpu: 3/8 (38%)" in html
    assert "team-a/quota-a cpu:" in html
    assert "no preemptions recorded" in html
    # unschedulable attempts come from v_unschedulable_reasons, per day
    assert re.search(r"<title>\d{4}-\d{2}-\d{2} · \w+: 1</title>", html)


def test_charts_fall_back_to_the_events_without_the_views(signed_in, monkeypatch):
    from ledger.queries import reports

    monkeypatch.setattr(reports, "view_readable", lambda conn, view: False)
    html = signed_in.get("/charts").text
    assert html.count("<svg") == 11
    assert re.search(r"<title>\d{2}:\d{2}:\d{2} · Unschedulable: \d+</title>", html)


def test_log_viewer_pages_and_filters(signed_in, demo_database):
    from ledger import store

    with demo_database.connect() as conn:
        head = store.head(conn)
    newest = signed_in.get("/log?limit=10").text
    positions = [int(p) for p in re.findall(r'<tr id="p(\d+)">', newest)]
    assert positions == list(range(head - 9, head + 1))
    older = signed_in.get(f"/log?before={positions[0]}&limit=10").text
    assert [int(p) for p in re.findall(r'<tr id="p(\d+)">', older)] == list(range(head - 19, head - 9))
    after = signed_in.get("/log?after=0&limit=5").text
    assert [int(p) for p in re.findall(r'<tr id="p(\d+)">', after)] == [1, 2, 3, 4, 5]
    only = signed_in.get("/log?type=PodGroupCreated").text
    # the example cluster's 6 PodGroups, the giant, and 1 compiled from the example Job
    assert only.count("<tr id=") == 8 and "PodCreated" not in only
    assert "<details>" in newest and "&lt;script" not in newest
