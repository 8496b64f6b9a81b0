"""The dashboard as of any moment (issue 34): ?at= on every page, timeline links to the
explanation at a position, plots over time with filters."""

from __future__ import annotations

import re

import pytest

from api.http.auth import COOKIE
from ledger.sql import scalar
from tests.http.conftest import TOKENS


@pytest.fixture()
def signed_in(demo_client):  # type: ignore[no-untyped-def]
    demo_client.cookies.set(COOKIE, TOKENS["reader"])
    yield demo_client
    demo_client.cookies.clear()


def test_group_page_as_of_a_position(signed_in, demo_database):
    with demo_database.connect() as c:
        created = int(
            scalar(
                c,
                "SELECT min(position) FROM events WHERE type = 'PodGroupCreated' AND stream LIKE %s",
                ("%/llm-pretrain",),
            )
        )
    now = signed_in.get("/groups/team-a/llm-pretrain").text
    links = re.findall(r'class="at-link" href="/groups/team-a/llm-pretrain\?at=(\d+)"', now)
    assert links and int(links[0]) == created  # every timeline entry links to the explanation then
    then = signed_in.get(f"/groups/team-a/llm-pretrain?at={created}").text
    assert f"as of position {created}" in then
    assert f"(as of position {created})" in then  # explain's own header, at that position
    assert 'class="timeline"' in then and "future" in then  # later entries are marked
    assert 'type="range"' in then and f'value="{created}"' in then
    # before it existed: not found at that position
    gone = signed_in.get(f"/groups/team-a/llm-pretrain?at={created - 1}")
    assert gone.status_code == 404
    assert signed_in.get("/groups/team-a/llm-pretrain?at=yesterday-ish").status_code == 400


def test_groups_log_and_charts_honour_at_and_filters(signed_in, demo_database):
    with demo_database.connect() as c:
        first_group = int(scalar(c, "SELECT min(position) FROM events WHERE type = 'PodGroupCreated'"))
    html = signed_in.get(f"/?at={first_group}").text
    names = re.findall(r'class="group-link" href="[^"]+\?at=\d+">([^<]+)</a>', html)
    assert len(names) == 1 and f"as of position {first_group}" in html
    assert "giant" in signed_in.get("/?namespace=team-a").text
    assert "giant" not in signed_in.get("/?namespace=team-b").text
    log = signed_in.get(f"/log?at={first_group}&limit=5").text
    assert f">{first_group}<" in log
    charts = signed_in.get("/charts").text
    assert charts.count('class="series"') >= 5  # step lines over time
    assert 'text-anchor="start"' in charts and 'class="tick"' in charts
    filtered = signed_in.get("/charts?namespace=team-a").text
    assert '<option value="team-a" selected>' in filtered
    assert f"as of position {first_group}" in signed_in.get(f"/charts?at={first_group}").text


def test_a_pending_group_page_shows_its_predicted_start(signed_in):
    html = signed_in.get("/groups/team-a/giant").text
    assert "Predicted: starts in" in html and "past lifetimes" in html
