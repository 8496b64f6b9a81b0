"""The HTML dashboard: server-rendered Jinja2 pages with inline SVG charts (no CDN, no JS).

Browsers cannot send a bearer header, so the dashboard signs in once at ``/login`` with a
token of any role and keeps it in an HttpOnly, SameSite=Strict cookie; every page checks it
like the API checks a bearer token. With ``--insecure-local`` there is nothing to sign in to.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, quote

import orjson
from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from api.app import DASHBOARD_DIR, context
from api.auth import COOKIE, LOCAL, Principal
from api.dashboard import charts, queries

router = APIRouter(include_in_schema=False)
templates = Jinja2Templates(directory=str(DASHBOARD_DIR / "templates"))


def _json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()


def _short(value: Any, n: int = 140) -> str:
    text = orjson.dumps(value).decode()
    return text if len(text) <= n else text[: n - 1] + "…"


templates.env.filters["pretty"] = _json
templates.env.filters["short"] = _short
def _ts(value: Any) -> str:
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return value
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    return ""


templates.env.filters["ts"] = _ts


def _principal(request: Request) -> Principal | None:
    ctx = context(request)
    if not ctx.tokens:
        return LOCAL if ctx.insecure_local else None
    return ctx.tokens.lookup(request.cookies.get(COOKIE))


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
    return templates.TemplateResponse(request, "login.html", {"next": _safe_next(next), "error": "", "principal": None})


@router.post("/login", response_class=HTMLResponse)
async def login(request: Request) -> Response:
    body = await request.body()
    form = parse_qs(body.decode("utf-8", "replace"), max_num_fields=4)
    token = (form.get("token") or [""])[0]
    nxt = _safe_next((form.get("next") or ["/"])[0])
    principal = context(request).tokens.lookup(token.strip())
    if principal is None:
        return templates.TemplateResponse(
            request, "login.html", {"next": nxt, "error": "That token is not valid.", "principal": None}, status_code=401
        )
    resp = RedirectResponse(nxt, status_code=303)
    resp.set_cookie(
        COOKIE,
        token.strip(),
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        max_age=12 * 3600,
    )
    return resp


@router.post("/logout")
async def logout() -> Response:
    resp = RedirectResponse("/login", status_code=303)
    resp.delete_cookie(COOKIE)
    return resp


# ------------------------------------------------------------------------------- pages


@router.get("/", response_class=HTMLResponse)
async def groups_page(request: Request, q: str = "", state: str = "") -> Response:
    principal = _principal(request)
    if principal is None:
        return _login_redirect(request)
    engine = context(request).engine

    def load() -> dict[str, Any]:
        with engine.connect() as conn:
            rows = queries.groups(conn)
            labels, done, waiting = queries.wait_distribution(rows)
            buckets, series = queries.attempts_over_time(conn)
        counts = {s: sum(1 for r in rows if r.state == s) for s in ("scheduled", "unschedulable", "pending")}
        return {
            "rows": queries.filter_groups(rows, q, state),
            "total": len(rows),
            "counts": counts,
            "wait_chart": charts.stacked_bars(
                "Group wait time", labels, {"scheduled": done, "still waiting": waiting}, empty="no groups yet"
            ),
            "attempts_chart": charts.stacked_bars(
                "Scheduling attempts over time, by result", buckets, series, empty="no scheduling cycles yet"
            ),
        }

    data = await run_in_threadpool(load)
    return _render(request, "groups.html", principal, q=q, state=state, **data)


def _fallback_explanation(
    kind: str, ns: str, name: str, status: dict[str, Any], pods: list[dict[str, Any]], events: list[dict[str, Any]]
) -> str:
    """A plain explanation from the projection and the group's events (when the audit service
    is not available)."""
    cond = queries._condition(status)
    lines = []
    if cond.get("status") == "True":
        where = sorted({p["node"] for p in pods if p["node"]})
        lines.append(f"{kind} {ns}/{name} is scheduled ({cond.get('reason') or 'Scheduled'}).")
        if where:
            lines.append(f"Its pods run on {len(where)} node(s): {', '.join(where)}.")
    elif cond:
        lines.append(f"{kind} {ns}/{name} is not scheduled: {cond.get('reason')}.")
        if cond.get("message"):
            lines.append(str(cond["message"]))
    else:
        lines.append(f"{kind} {ns}/{name} has not been scheduled yet.")
    last_diag = next((e for e in reversed(events) if e["type"] == "PodGroupUnschedulable"), None)
    if last_diag and cond.get("status") != "True":
        lines.append(f"Last diagnosis (position {last_diag['position']}): {last_diag['data'].get('message', '')}")
    attempts = [e for e in events if e["type"].endswith("Requeued")]
    if attempts and cond.get("status") != "True":
        a = attempts[-1]["data"]
        lines.append(f"Attempted {a.get('attempts')} time(s); now in the {a.get('queue')} queue.")
    pending = [p for p in pods if p["phase"] != "Bound"]
    if pending and cond.get("status") != "True":
        lines.append(f"{len(pending)} of {len(pods)} pods are waiting.")
    return "\n".join(lines)


@router.get("/groups/{namespace}/{name}", response_class=HTMLResponse)
async def group_page(request: Request, namespace: str, name: str, kind: str = "") -> Response:
    principal = _principal(request)
    if principal is None:
        return _login_redirect(request)
    engine = context(request).engine
    kind_name = "CompositePodGroup" if kind.lower() in ("composite", "compositepodgroup", "cpg") else "PodGroup"

    def load() -> dict[str, Any] | None:
        with engine.connect() as conn:
            found = queries.group_object(conn, kind_name, namespace, name)
            if found is None:
                return None
            obj, status, created = found
            pods = queries.group_pods(conn, namespace, name) if kind_name == "PodGroup" else []
            children = queries.child_groups(conn, namespace, name) if kind_name == "CompositePodGroup" else []
            events = queries.group_events(conn, kind_name, namespace, name)
        explanation = None
        timeline: list[dict[str, Any]] | None = None
        from api import audit

        if kind_name == "PodGroup":
            try:
                explanation = audit.render_explain(audit.explain(engine, "podgroup", namespace, name))
            except (ImportError, AttributeError, NotImplementedError, LookupError):
                explanation = None
        try:
            timeline = [
                {
                    "position": h.get("position"),
                    "time": h.get("time"),
                    "type": h.get("type", ""),
                    "summary": h.get("summary") or queries.summarize(h.get("type", ""), h.get("data") or {}),
                    "category": queries.category(h.get("type", ""), h.get("data") or {}),
                }
                for h in audit.history(engine, kind_name.lower(), namespace, name)
            ]
        except (ImportError, AttributeError, NotImplementedError, LookupError):
            timeline = None
        if not timeline:
            timeline = [
                {
                    "position": e["position"],
                    "time": e["time"],
                    "type": e["type"],
                    "summary": queries.summarize(e["type"], e["data"]),
                    "category": queries.category(e["type"], e["data"]),
                }
                for e in events
            ]
        if not explanation:
            explanation = _fallback_explanation(kind_name, namespace, name, status, pods, events)
        per_node: dict[str, int] = {}
        for p in pods:
            if p["node"]:
                per_node[p["node"]] = per_node.get(p["node"], 0) + 1
        nodes_sorted = sorted(per_node)
        cond = queries._condition(status)
        return {
            "kind": kind_name,
            "namespace": namespace,
            "name": name,
            "object": obj,
            "status": status,
            "condition": cond,
            "created": created,
            "pods": pods,
            "children": children,
            "timeline": timeline,
            "explanation": explanation,
            "timeline_chart": charts.timeline(
                f"Timeline of {namespace}/{name}",
                [
                    (int(t["position"] or 0), t["type"], t["category"], str(t["time"] or ""))
                    for t in timeline
                ],
            ),
            "placement_chart": charts.bar_chart(
                f"Pods of {namespace}/{name} per node",
                nodes_sorted,
                [per_node[n] for n in nodes_sorted],
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
            message=f"{kind_name} {namespace}/{name} does not exist (or was deleted).",
        )
    return _render(request, "group.html", principal, **data)


@router.get("/charts", response_class=HTMLResponse)
async def charts_page(request: Request) -> Response:
    principal = _principal(request)
    if principal is None:
        return _login_redirect(request)
    engine = context(request).engine

    def load() -> dict[str, Any]:
        with engine.connect() as conn:
            rows = queries.groups(conn)
            labels, done, waiting = queries.wait_distribution(rows, conn)
            u_buckets, u_series = queries.unschedulable_over_time(conn)
            a_buckets, a_series = queries.attempts_over_time(conn)
            p_buckets, p_series = queries.preemptions_over_time(conn)
            nodes = queries.node_utilization(conn)
            quotas = queries.quota_usage(conn)
        marker = {
            (q.label, r): q.low[r] / q.total[r] for q in quotas for r in q.low if q.total.get(r)
        }
        return {
            "wait_chart": charts.stacked_bars(
                "Group wait time distribution", labels, {"scheduled": done, "still waiting": waiting}, empty="no groups yet"
            ),
            "unsched_chart": charts.stacked_bars(
                "Unschedulable reasons over time", u_buckets, u_series, empty="no unschedulable attempts recorded"
            ),
            "attempts_chart": charts.stacked_bars(
                "Scheduling attempts over time, by result", a_buckets, a_series, empty="no scheduling cycles yet"
            ),
            "preempt_chart": charts.stacked_bars(
                "Preemptions over time, by rule", p_buckets, p_series, empty="no preemptions recorded"
            ),
            "node_chart": charts.utilization(
                "Node utilization (requested / allocatable)", [(n.label, n.bars()) for n in nodes], empty="no nodes"
            ),
            "quota_chart": charts.utilization(
                "Quota utilization (used / max; tick = min)",
                [(q.label, q.bars()) for q in quotas],
                marker=marker,
                empty="no ElasticQuotas",
            ),
        }

    data = await run_in_threadpool(load)
    return _render(request, "charts.html", principal, **data)


@router.get("/log", response_class=HTMLResponse)
async def log_page(
    request: Request,
    after: int | None = None,
    before: int | None = None,
    limit: int = 50,
    type: str = "",
    stream: str = "",
) -> Response:
    principal = _principal(request)
    if principal is None:
        return _login_redirect(request)
    engine = context(request).engine
    limit = max(1, min(limit, 500))
    after = max(0, after) if after is not None else None

    def load() -> dict[str, Any]:
        with engine.connect() as conn:
            rows, head = queries.log_page(
                conn, after=after, before=before, limit=limit, type_=type.strip(), stream=stream.strip()
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
