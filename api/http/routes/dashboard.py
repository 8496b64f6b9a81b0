"""The HTML dashboard: server-rendered Jinja2 pages with inline SVG charts (no CDN). Pages work
without JavaScript; ``/static/live.js`` refreshes a page's ``data-live`` regions in place when the
log grows, from the Server-Sent Events of ``/live`` (the log stream, authenticated by the
dashboard's cookie).

Browsers cannot send a bearer header, so the dashboard signs in once at ``/login`` with a
token of any role and keeps it in an HttpOnly, SameSite=Strict cookie; every page checks it
like the API checks a bearer token. With ``--insecure-local`` there is nothing to sign in to.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote

import orjson
from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from api.http.auth import COOKIE, Principal
from api.http.context import context
from api.http.dashboard import charts, timecharts
from api.http.routes.events import event_stream
from api.services import dashboard

if TYPE_CHECKING:
    from ledger.database import Database

DASHBOARD_DIR = Path(__file__).resolve().parent.parent / "dashboard"
router = APIRouter(include_in_schema=False)
templates = Jinja2Templates(directory=str(DASHBOARD_DIR / "templates"))


def _json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()


def _short(value: Any, n: int = 140) -> str:
    """A one-line preview of a payload (the whole JSON is in the row's details): the whole JSON
    when short, else whole fields while they fit and a count of the others; nothing is cut."""
    text = orjson.dumps(value).decode()
    if len(text) <= n or not isinstance(value, dict) or not value:
        return text
    parts: list[str] = []
    for k, v in value.items():
        part = f"{orjson.dumps(k).decode()}:{orjson.dumps(v).decode()}"
        if parts and sum(len(p) + 1 for p in parts) + len(part) > n:
            break
        parts.append(part)
    rest = len(value) - len(parts)
    return "{" + ",".join(parts) + (f", …and {rest} more field(s)" if rest else "") + "}"


templates.env.filters["pretty"] = _json
templates.env.filters["short"] = _short


def _ts(value: Any) -> str:
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return str(value)
    if isinstance(value, datetime):
        moment: datetime = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    return ""


templates.env.filters["ts"] = _ts


def _principal(request: Request) -> Principal | None:
    """The signed-in user: the cookie's token, checked (and throttled) like a bearer token."""
    ctx = context(request)
    cookie = request.cookies.get(COOKIE)
    if ctx.tokens and not cookie:
        return None
    return ctx.authenticate(request, cookie).principal


def _safe_next(value: str | None) -> str:
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/"
    return value


def _login_redirect(request: Request) -> RedirectResponse:
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse(f"/login?next={quote(target, safe='')}", status_code=303)


def _render(
    request: Request, template: str, principal: Principal, status_code: int = 200, **ctx: Any
) -> HTMLResponse:
    return templates.TemplateResponse(
        request, template, {"principal": principal, "path": request.url.path, **ctx}, status_code=status_code
    )


# ------------------------------------------------------------------------------- login


@router.get("/login", response_class=HTMLResponse)
async def login_form(request: Request, next: str = "/") -> Response:
    ctx = context(request)
    if not ctx.tokens:
        return RedirectResponse(_safe_next(next), status_code=303)
    return templates.TemplateResponse(
        request, "login.html", {"next": _safe_next(next), "error": "", "principal": None}
    )


@router.post("/login", response_class=HTMLResponse)
async def login(request: Request) -> Response:
    body = await request.body()
    form = parse_qs(body.decode("utf-8", "replace"), max_num_fields=4)
    token = (form.get("token") or [""])[0]
    nxt = _safe_next((form.get("next") or ["/"])[0])
    ctx = context(request)
    outcome = ctx.authenticate(request, token.strip())  # throttled per client, like bearer tokens
    principal = outcome.principal
    if principal is None:
        throttled = outcome.status == 429
        message = f"Too many failed attempts; try again in {outcome.retry_after} s." if throttled else ""
        return templates.TemplateResponse(
            request,
            "login.html",
            {"next": nxt, "error": message or "That token is not valid.", "principal": None},
            status_code=outcome.status,
            headers={"Retry-After": str(outcome.retry_after)} if throttled else None,
        )
    resp = RedirectResponse(nxt, status_code=303)
    resp.set_cookie(
        COOKIE,
        token.strip(),
        httponly=True,
        samesite="strict",
        secure=ctx.scheme(request) == "https",
        max_age=12 * 3600,
    )
    return resp


@router.post("/logout")
async def logout() -> Response:
    resp = RedirectResponse("/login", status_code=303)
    resp.delete_cookie(COOKIE)
    return resp


# ------------------------------------------------------------------------------- live


@router.get("/live")
async def live(request: Request) -> Response:
    """The log as Server-Sent Events for the dashboard's live refresh: one unnamed message per
    new event (``{position, type}``), from the head (or ``Last-Event-ID``)."""
    if _principal(request) is None:
        return Response("sign in first", status_code=401, media_type="text/plain")
    return await event_stream(
        request, None, None, None, None, request.headers.get("Last-Event-ID"), brief=True
    )


# ------------------------------------------------------------------------------- pages


async def _reader_at(request: Request, at: str) -> tuple[Database, int | None, datetime | None]:
    """The database this request reads (a standby when one serves: routing may wait, so off the
    event loop) and ``?at=`` resolved on it as (position, its time); ValueError for a bad ``at``."""
    ctx = context(request)

    def resolve() -> tuple[Database, int | None, datetime | None]:
        db = ctx.read_db
        return (db, *dashboard.at_time(db, at))

    return await run_in_threadpool(resolve)


def _bad_at(request: Request, principal: Principal, at: str, exc: Exception) -> Response:
    return _render(
        request, "error.html", principal, status_code=400, title="Bad ?at=", message=f"at={at!r}: {exc}"
    )


@router.get("/", response_class=HTMLResponse)
async def groups_page(
    request: Request, q: str = "", state: str = "", at: str = "", namespace: str = "", priority: str = ""
) -> Response:
    principal = _principal(request)
    if principal is None:
        return _login_redirect(request)
    try:
        db, pos, when = await _reader_at(request, at)
    except ValueError as exc:
        return _bad_at(request, principal, at, exc)

    def load() -> dict[str, Any]:
        page = dashboard.groups_page(
            db, q, state, at=pos, at_when=when, namespace=namespace, priority_class=priority
        )
        labels, done, waiting = page.pop("wait")
        buckets, series = page.pop("attempts")
        return {
            **page,
            "wait_chart": charts.stacked_bars(
                "Group wait time",
                labels,
                {"scheduled": done, "still waiting": waiting},
                empty="no groups yet",
            ),
            "attempts_chart": charts.stacked_bars(
                "Scheduling attempts over time, by result", buckets, series, empty="no scheduling cycles yet"
            ),
        }

    data = await run_in_threadpool(load)
    return _render(
        request,
        "groups.html",
        principal,
        q=q,
        state=state,
        at=pos,
        at_when=when,
        namespace=namespace,
        priority=priority,
        **data,
    )


@router.get("/groups/{namespace}/{name}", response_class=HTMLResponse)
async def group_page(request: Request, namespace: str, name: str, kind: str = "", at: str = "") -> Response:
    principal = _principal(request)
    if principal is None:
        return _login_redirect(request)
    try:
        db, pos, when = await _reader_at(request, at)
    except ValueError as exc:
        return _bad_at(request, principal, at, exc)
    kind_name = (
        "CompositePodGroup" if kind.lower() in ("composite", "compositepodgroup", "cpg") else "PodGroup"
    )

    def load() -> dict[str, Any] | None:
        page = dashboard.group_page(db, kind_name, namespace, name, pos)
        if page is None:
            return None
        per_node = page.pop("per_node")
        return {
            **page,
            "timeline_chart": charts.timeline(
                f"Timeline of {namespace}/{name}",
                [
                    (int(t["position"] or 0), t["type"], t["category"], str(t["time"] or ""))
                    for t in page["timeline"]
                ],
            ),
            "placement_chart": charts.bar_chart(
                f"Pods of {namespace}/{name} per node",
                list(per_node),
                list(per_node.values()),
                height=200,
                empty="no pod of this group is bound",
            ),
        }

    data = await run_in_threadpool(load)
    if data is None:
        return _render(
            request,
            "error.html",
            principal,
            status_code=404,
            title="Not found",
            message=f"{kind_name} {namespace}/{name} does not exist (or was deleted)"
            + (f" at position {pos}." if pos is not None else "."),
        )
    first = min((int(t["position"] or 0) for t in data["timeline"]), default=1)
    head = await run_in_threadpool(dashboard.head, db)
    return _render(
        request,
        "group.html",
        principal,
        at=pos,
        at_when=when,
        head=head,
        first=first,
        kind_param=kind,
        **data,
    )


def _time_arg(value: str) -> datetime | None:
    if not value:
        return None
    t = datetime.fromisoformat(value)
    return t if t.tzinfo else t.replace(tzinfo=UTC)


@router.get("/charts", response_class=HTMLResponse)
async def charts_page(
    request: Request,
    at: str = "",
    namespace: str = "",
    priority: str = "",
    quota: str = "",
    since: str = Query("", alias="from"),
    until: str = Query("", alias="to"),
) -> Response:
    principal = _principal(request)
    if principal is None:
        return _login_redirect(request)
    try:
        db, pos, when = await _reader_at(request, at)
        t_from, t_to = _time_arg(since), _time_arg(until)
        prio = int(priority) if priority.strip() else None
    except ValueError as exc:
        return _bad_at(request, principal, at, exc)
    if when is not None:
        t_to = min(t_to, when) if t_to else when

    def load() -> dict[str, Any]:
        ts = dashboard.time_series(
            db, namespace=namespace or None, priority=prio, quota=quota or None, since=t_from, until=t_to
        )
        times, series = ts["times"], ts["series"]
        plots = {
            f"{key}_plot": timecharts.step_lines(
                title, times, series.get(key) or {}, empty="no hourly data yet"
            )
            for key, title in (
                ("pending", "Pending over time (hourly average)"),
                ("gpu", "GPUs allocated vs the GPUs that existed (hourly average)"),
                ("cpu", "CPU cores allocated vs the cores that existed (hourly average)"),
                ("waits", "Wait p50 / p90 of the starts in each hour (s)"),
                ("preemptions", "Preemptions per hour"),
            )
        }
        figures = dashboard.charts_page(db)
        labels, done, waiting = figures["wait"]
        u_buckets, u_series = figures["unschedulable"]
        a_buckets, a_series = figures["attempts"]
        p_buckets, p_series = figures["preemptions"]
        nodes, quotas = figures["nodes"], figures["quotas"]
        marker = {(q.label, r): q.low[r] / q.total[r] for q in quotas for r in q.low if q.total.get(r)}
        return {
            **plots,
            "namespaces": ts["namespaces"],
            "wait_chart": charts.stacked_bars(
                "Group wait time distribution",
                labels,
                {"scheduled": done, "still waiting": waiting},
                empty="no groups yet",
            ),
            "unsched_chart": charts.stacked_bars(
                "Unschedulable reasons over time",
                u_buckets,
                u_series,
                empty="no unschedulable attempts recorded",
            ),
            "attempts_chart": charts.stacked_bars(
                "Scheduling attempts over time, by result",
                a_buckets,
                a_series,
                empty="no scheduling cycles yet",
            ),
            "preempt_chart": charts.stacked_bars(
                "Preemptions over time, by rule", p_buckets, p_series, empty="no preemptions recorded"
            ),
            "node_chart": charts.utilization(
                "Node utilization (requested / allocatable)",
                [(n.label, n.bars()) for n in nodes],
                empty="no nodes",
            ),
            "quota_chart": charts.utilization(
                "Quota utilization (used / max; tick = min)",
                [(q.label, q.bars()) for q in quotas],
                marker=marker,
                empty="no ElasticQuotas",
            ),
        }

    data = await run_in_threadpool(load)
    return _render(
        request,
        "charts.html",
        principal,
        at=pos,
        at_when=when,
        namespace=namespace,
        priority=priority,
        quota=quota,
        since=since,
        until=until,
        **data,
    )


@router.get("/log", response_class=HTMLResponse)
async def log_page(
    request: Request,
    after: int | None = None,
    before: int | None = None,
    limit: int = 50,
    type: str = "",
    stream: str = "",
    at: str = "",
) -> Response:
    principal = _principal(request)
    if principal is None:
        return _login_redirect(request)
    page_at = at if before is None and after is None else ""  # the page of the log ending there
    try:
        db, pos, _when = await _reader_at(request, page_at)
    except ValueError as exc:
        return _bad_at(request, principal, at, exc)
    if page_at:
        before = (pos or 0) + 1
    limit = max(1, min(limit, 500))
    after = max(0, after) if after is not None else None

    def load() -> dict[str, Any]:
        rows, head = dashboard.log_page(
            db, after=after, before=before, limit=limit, type_=type.strip(), stream=stream.strip()
        )
        return {"rows": rows, "head": head}

    data = await run_in_threadpool(load)
    rows = data["rows"]
    first = rows[0]["position"] if rows else (after or 0)
    last = rows[-1]["position"] if rows else (after or 0)
    return _render(
        request,
        "log.html",
        principal,
        rows=rows,
        head=data["head"],
        type=type,
        stream=stream,
        limit=limit,
        older=first if rows and first > 1 else None,
        newer=last if rows and last < data["head"] else None,
    )
