"""The dashboard in a real browser: Debian's chromium driven by Playwright for Python.

The demo data (the example cluster plus a gang that cannot fit) is loaded and scheduled, the
app is served by uvicorn on 127.0.0.1, and chromium signs in, opens the groups table, follows
a group to its page and checks that the explanation and a chart are there. Screenshots go to
``test-output/``.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn

from api.http.app import create_app
from tests.http.conftest import OUTPUT, TOKEN_SPEC, TOKENS

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _ensure_chromium() -> str | None:
    """Debian's chromium, installed with apt-get when missing and we are root; else a reason."""
    if os.path.exists(CHROMIUM):
        return None
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return f"{CHROMIUM} is missing and apt-get cannot run here (not root or not Debian)"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    try:
        subprocess.run(["apt-get", "update", "-qq"], env=env, capture_output=True, timeout=300)
        res = subprocess.run(
            ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "chromium"],
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"installing chromium failed: {exc}"
    if res.returncode != 0 or not os.path.exists(CHROMIUM):
        return f"apt-get install chromium failed: {res.stderr.strip()[-300:]}"
    return None


@pytest.fixture(scope="module")
def chromium() -> str:
    reason = _ensure_chromium()
    if reason:
        pytest.skip(reason)
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip("playwright (Python) is not installed: pip install -e '.[dev]'")
    return CHROMIUM


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def live_url(demo_database) -> Iterator[str]:  # type: ignore[no-untyped-def]
    port = _free_port()
    config = uvicorn.Config(
        create_app(demo_database, TOKEN_SPEC), host="127.0.0.1", port=port, log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


def test_dashboard_in_chromium(chromium, live_url):
    from playwright.sync_api import sync_playwright

    OUTPUT.mkdir(exist_ok=True)
    requests_outside: list[str] = []
    csp_violations: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on(
                "request",
                lambda req: None if req.url.startswith(live_url) else requests_outside.append(req.url),
            )
            # the security headers' Content-Security-Policy must not block anything the dashboard uses
            page.on(
                "console",
                lambda msg: (
                    csp_violations.append(msg.text) if "Content Security Policy" in msg.text else None
                ),
            )
            page.goto(live_url + "/", wait_until="load")
            # not signed in: the login form, then back to the groups table
            assert "/login" in page.url
            page.fill("input[name=token]", TOKENS["reader"])
            page.click("button[type=submit]")
            page.wait_for_url(live_url + "/")
            assert page.locator("h1").first.inner_text() == "Groups"
            rows = page.locator("table.groups tbody tr")
            assert rows.count() >= 7
            assert page.locator("table.groups").inner_text().count("Scheduled") >= 5
            page.screenshot(path=str(OUTPUT / "dashboard-groups.png"), full_page=True)

            # the filter narrows the table
            page.fill("input[name=q]", "giant")
            page.click("form.filter button")
            page.wait_for_url("**/?q=giant*")
            assert page.locator("table.groups tbody tr").count() == 1

            # follow the group to its page
            page.click("a.group-link:text-is('giant')")
            page.wait_for_url("**/groups/team-a/giant")
            explanation = page.locator("#explanation").inner_text()
            assert "giant" in explanation
            assert any(
                w in explanation.lower() for w in ("unschedulable", "mincount", "cannot", "not scheduled")
            )
            assert page.locator("svg.chart").count() >= 2
            assert page.locator("svg.chart circle.point").count() >= 2  # the timeline has events
            assert page.locator("table.timeline tbody tr").count() >= 2
            page.screenshot(path=str(OUTPUT / "dashboard-group.png"), full_page=True)

            # a scheduled group shows where its pods are
            page.goto(live_url + "/groups/team-a/llm-pretrain")
            assert page.locator("svg.chart rect.bar").count() >= 1
            assert "node-r4-" in page.locator("section.card table").first.inner_text()

            page.goto(live_url + "/charts")
            assert page.locator("svg.chart").count() == 11  # 6 charts and 5 plots over time (issue 34)
            assert page.locator("svg.chart rect.bar").count() > 10
            page.screenshot(path=str(OUTPUT / "dashboard-charts.png"), full_page=True)

            page.goto(live_url + "/log?limit=20")
            assert page.locator("table.log tbody tr").count() == 20
            page.click("text=← older")
            assert page.locator("table.log tbody tr").count() == 20
        finally:
            browser.close()
    assert requests_outside == [], f"the dashboard fetched from elsewhere: {requests_outside}"
    assert csp_violations == [], csp_violations
    assert (OUTPUT / "dashboard-group.png").stat().st_size > 10_000


def test_docs_offline_in_chromium(chromium, live_url):
    """``/docs`` with the network blocked: every request that is not to the local server is
    aborted, and Swagger UI (served from the packaged files) still lists the API's operations."""
    from playwright.sync_api import sync_playwright

    OUTPUT.mkdir(exist_ok=True)
    blocked: list[str] = []

    def only_local(route) -> None:  # type: ignore[no-untyped-def]
        url = route.request.url
        if url.startswith(live_url) or url.startswith("data:"):
            route.continue_()
        else:
            blocked.append(url)
            route.abort()

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.route("**/*", only_local)
            page.goto(live_url + "/docs", wait_until="load")
            page.wait_for_selector(".opblock", timeout=30_000)
            operations = page.locator(".opblock-summary-path").all_inner_texts()
            assert page.locator(".info .title").first.inner_text().startswith("podledger")
            page.screenshot(path=str(OUTPUT / "docs-offline.png"), full_page=False)
        finally:
            browser.close()
    paths = {p.replace("\u200b", "").strip() for p in operations}
    assert len(paths) >= 10, paths
    assert "/podledger/v1/apply" in paths or any(p.startswith("/podledger/v1/") for p in paths), paths
    assert "/healthz" in paths, paths
    assert blocked == [], f"/docs fetched from elsewhere: {blocked}"


LIVE_GROUP = """
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: live-arrival, namespace: team-a}
spec:
  schedulingPolicy: {gang: {minCount: 1}}
"""


def _no_horizontal_overflow(page) -> int:  # type: ignore[no-untyped-def]
    """How many CSS pixels the document is wider than the viewport (0 = no horizontal scroll)."""
    return int(page.evaluate("document.documentElement.scrollWidth - window.innerWidth"))


def test_dashboard_live_refresh_and_narrow_viewport(chromium, live_url, demo_database):
    """A group applied while the groups page is open appears in its table from the /live SSE
    stream, without a reload; at 400 px wide no page scrolls horizontally (issue 21)."""
    from playwright.sync_api import sync_playwright

    from api.services.commands.objects import apply_manifests

    OUTPUT.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 400, "height": 800})
            page.goto(live_url + "/login", wait_until="load")
            page.fill("input[name=token]", TOKENS["reader"])
            page.click("button[type=submit]")
            page.wait_for_url(live_url + "/")
            # the SSE stream is open before the change is made
            page.wait_for_selector("#live-status.on", timeout=15_000)
            assert "live-arrival" not in page.locator("table.groups").inner_text()
            page.evaluate("window.__sameDocument = 'yes'")
            navigations: list[str] = []
            page.on("framenavigated", lambda frame: navigations.append(frame.url))

            with demo_database.unit_of_work() as uow:  # a whole request: it commits the unit
                applied = apply_manifests(uow, LIVE_GROUP, actor="browser-test", source="test")
            assert applied.events, applied.results

            page.wait_for_selector("a.group-link:text-is('live-arrival')", timeout=15_000)
            assert page.evaluate("window.__sameDocument") == "yes", "the page was reloaded"
            assert navigations == []
            assert int(page.get_attribute("body", "data-live-position") or 0) > 0
            assert _no_horizontal_overflow(page) <= 0
            page.screenshot(path=str(OUTPUT / "dashboard-groups-400px.png"), full_page=True)

            for path in ("/groups/team-a/giant", "/groups/team-a/llm-pretrain", "/charts", "/log?limit=20"):
                page.goto(live_url + path, wait_until="load")
                over = _no_horizontal_overflow(page)
                assert over <= 0, f"{path} is {over}px wider than a 400px viewport"
            page.goto(live_url + "/groups/team-a/giant", wait_until="load")
            page.screenshot(path=str(OUTPUT / "dashboard-group-400px.png"), full_page=True)
        finally:
            browser.close()


def test_dashboard_as_of_a_position_plots_filters_at_400px(chromium, live_url, demo_database):
    """Issue 34 in chromium: a timeline entry opens the group's page as of that position; the
    charts page plots over time and its namespace filter applies; at 400 px wide neither page
    scrolls horizontally (screenshots in test-output/)."""
    from playwright.sync_api import sync_playwright

    OUTPUT.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 400, "height": 800})
            page.goto(live_url + "/login", wait_until="load")
            page.fill("input[name=token]", TOKENS["reader"])
            page.click("button[type=submit]")
            page.wait_for_url(live_url + "/")
            page.goto(live_url + "/groups/team-a/llm-pretrain", wait_until="load")
            first = page.locator("table.timeline a.at-link").first
            position = first.inner_text()
            first.click()
            page.wait_for_url(f"**/groups/team-a/llm-pretrain?at={position}")
            assert f"as of position {position}" in page.locator("#asof-pill").inner_text()
            assert f"(as of position {position})" in page.locator("#explanation").inner_text()
            assert page.locator("table.timeline tr.future").count() >= 1
            assert page.locator("#at-slider").get_attribute("value") == position
            assert _no_horizontal_overflow(page) <= 0
            page.screenshot(path=str(OUTPUT / "dashboard-group-at-400px.png"), full_page=True)

            page.goto(live_url + "/charts", wait_until="load")
            assert page.locator("#plots svg.chart polyline.series").count() >= 5
            assert page.locator("#plots svg.chart text.tick").count() >= 2  # a time axis
            page.select_option("select[name=namespace]", "team-a")
            page.click("#charts-filter button")
            page.wait_for_url("**/charts?namespace=team-a*")
            assert page.locator("select[name=namespace]").input_value() == "team-a"
            assert page.locator("#plots svg.chart").count() == 5
            assert _no_horizontal_overflow(page) <= 0
            page.screenshot(path=str(OUTPUT / "dashboard-charts-400px.png"), full_page=True)
        finally:
            browser.close()
    assert (OUTPUT / "dashboard-group-at-400px.png").stat().st_size > 5_000
