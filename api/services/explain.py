"""Explain: why a group or pod is where it is, from the log and the projection as of a position."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from api.services import explain_reads as reads
from api.services.errors import NotFound
from api.services.explain_words import exclusion_lines, preemption_of, readings
from api.services.history import canonical_kind
from api.services.jobs import job_pod_group
from ledger.queries import explain as explain_q
from ledger.queries import log as log_q
from ledger.resources.job import owning_job
from ledger.sql import Conn
from scheduler.cycle.why import summary_line
from scheduler.edge.bridge import Bridge, config_from

if TYPE_CHECKING:
    from ledger.database import Database

GROUP_DECISIONS = (
    "PodGroupUnschedulable",
    "PodGroupScheduled",
    "PodGroupConditionChanged",
    "PodGroupRetried",
)


def resolve_at(conn: Conn, at: int | str | None) -> int:
    """A position (capped at the head), an ISO time (the last event at or before it), or None
    (the head). Raises ValueError for anything else."""
    head = log_q.head(conn)
    if at is None or at == "":
        return head
    if isinstance(at, int) or str(at).isdigit():
        return min(int(at), head)
    try:
        when = datetime.fromisoformat(str(at).replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"--at must be a log position or an ISO time, got {at!r}") from None
    return log_q.position_at_time(conn, when)


def explain(
    db: Database, kind: str, namespace: str, name: str, *, at: int | str | None = None, nodes: bool = False
) -> dict[str, Any]:
    """Why a PodGroup, CompositePodGroup or Pod is where it is, as of position ``at`` (a
    position, an ISO time, or None for the head).

    Returns a dict: ``verdict`` (one line: scheduled where, waiting on which gate, or the reason
    of the last failed attempt), the scheduling ``condition``, ``reasons`` (the last attempt's
    message and diagnosis: per plugin how many nodes it rejected, per reason how many times),
    PreEnqueue ``gates`` still holding pods back, the number of ``attempts`` and the
    ``lastAttempt``, ``preemption`` (tried? taken? victims), the namespace's ``quota`` use and
    the ``pods``; with ``nodes`` also the recomputed per-node × plugin table. Everything comes
    from the log and the projection as of that position, so the answer is reproducible later.
    Raises NotFound (a LookupError) if the object does not exist at that position.
    """
    kind = canonical_kind(kind)
    namespace = namespace or "default"
    job = None
    if kind == "Job":  # a Job is explained through the PodGroup its controller compiled
        with db.connect() as conn:
            job_pos = resolve_at(conn, at)
        job, kind, name = f"{namespace}/{name}", "PodGroup", job_pod_group(db, namespace, name, job_pos)
    if kind not in ("PodGroup", "Pod", "CompositePodGroup"):
        raise ValueError(f"explain supports job, podgroup, compositepodgroup and pod, not {kind}")
    # one pooled connection for every read (checkouts cost), and one snapshot: the head and
    # the objects read with it agree
    with db.snapshot() as conn:
        inputs = read_inputs(conn, kind, namespace, name, at)
        return document(db, conn, kind, namespace, name, inputs, nodes, job)


def read_inputs(conn: Conn, kind: str, namespace: str, name: str, at: int | str | None) -> dict[str, Any]:
    """What explain reads, in one statement (``ledger.queries.explain``): live, or as of ``at``
    over the temporal projection. Raises NotFound when the object does not exist there."""
    pos = None if at is None or at == "" else resolve_at(conn, at)
    inputs = explain_q.explain_inputs(conn, kind, namespace, name, GROUP_DECISIONS, pos)
    if inputs is None:
        where = log_q.head(conn) if pos is None else pos
        raise NotFound(f"{kind} {namespace}/{name} not found at position {where}")
    return inputs


def document(
    db: Database,
    conn: Conn,
    kind: str,
    namespace: str,
    name: str,
    inputs: dict[str, Any],
    nodes: bool = False,
    job: str | None = None,
) -> dict[str, Any]:
    """The explain document of ``kind namespace/name`` from what ``read_inputs`` read (``head``,
    ``object``, ``status``, ``pods``, ``quota``, ``used``, ``decisions``, ``pod_events``,
    ``preempted`` and ``observed``, None: the shadow section reads the observations itself)."""
    pos = inputs["head"]
    obj, status = inputs["object"], inputs["status"]
    pods, quota, used = inputs["pods"], inputs["quota"], inputs["used"]
    group = (
        (((obj.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName"))
        if kind == "Pod"
        else None
    )
    if kind == "PodGroup":
        group = name
    decisions, pod_events, preempted = inputs["decisions"], inputs["pod_events"], inputs["preempted"]

    ctype = {
        "PodGroup": "PodGroupInitiallyScheduled",
        "CompositePodGroup": "CompositePodGroupInitiallyScheduled",
    }.get(kind)
    condition = None
    if ctype:
        condition = next((c for c in status.get("conditions") or [] if c.get("type") == ctype), None)
    elif kind == "Pod":
        condition = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), None)

    attempts = [
        e for e in decisions if e["type"] in ("PodGroupUnschedulable", "PodGroupScheduled", "PodGroupRetried")
    ]
    last = attempts[-1] if attempts else None
    if last and last["type"] == "PodGroupRetried":
        base = next(
            (e for e in reversed(decisions) if e["position"] == last["data"]["diagnosis_position"]), None
        )
        last = {**last, "data": {**(base["data"] if base else {}), "retried_at": last["position"]}}
    changes = reads.changes(conn, kind, namespace, name, group, [a["position"] for a in attempts], pos)
    gates: list[dict[str, Any]] = []
    latest_gate: dict[str, dict[str, Any]] = {}
    for e in pod_events:
        if e["type"] == "PodGated":
            latest_gate[e["data"]["pod"]] = e
        elif e["type"] in ("PodBound", "PodUnschedulable"):
            latest_gate.pop(e["data"]["pod"], None)
    for pk, e in sorted(latest_gate.items()):
        gates.append(
            {
                "pod": pk,
                "plugin": e["data"]["plugin"],
                "message": e["data"]["message"],
                "position": e["position"],
                "since": e["at"].isoformat(),
            }
        )

    bound = [p for p in pods if (p[2] or {}).get("phase") == "Bound"]
    stale = False  # the verdict is newer than the last attempt: its codes are not shown beside it
    if kind == "Pod":
        phase = status.get("phase") or "Pending"
        if phase == "Bound":
            verdict = f"Scheduled on {status.get('nodeName')}"
        elif phase == "Preempted":
            verdict = f"Preempted by {status.get('preemptedBy')}"
        elif gates:
            verdict = f"Waiting (not attempted): {gates[-1]['message']}"
        elif condition:
            verdict = f"{condition.get('reason')}: {condition.get('message')}"
        else:
            verdict = "Pending: not attempted yet"
    elif condition and condition.get("status") == "True":
        verdict = "Scheduled" + (f" ({len(bound)}/{len(pods)} pods bound)" if kind == "PodGroup" else "")
    elif gates and (not condition or (last and gates[-1]["position"] > last["position"])):
        verdict = f"Waiting (not attempted): {gates[-1]['message']}"
        stale = last is not None
    elif condition:
        verdict = f"{condition.get('reason')}: {condition.get('message')}"
    else:
        verdict = "Pending: not attempted yet"

    reasons: list[str] = []
    if last is not None:
        data = last["data"]
        if data.get("message"):
            reasons.append(data["message"])
        diag = data.get("diagnosis") or {}
        if data.get("exclusions"):
            reasons.extend(exclusion_lines(data["exclusions"], closest_only=True))
        else:
            for plugin, count in (diag.get("rejected") or {}).items():
                reasons.append(f"{plugin} rejected {count} of {diag.get('nodes')} nodes")
            for reason, count in diag.get("reasons") or []:
                reasons.append(f"{count} × {reason}")
        if diag.get("moreReasons"):
            reasons.append(f"…and {diag['moreReasons']} more reason(s) (the message above lists them all)")
        if diag.get("feasible"):
            reasons.append(f"PlacementFeasible: {diag['feasible']}")
        pls = diag.get("placements") or {}
        for line in pls.get("results") or []:
            reasons.append(f"placement {line}")
        if pls.get("more"):
            reasons.append(
                f"…and {pls['more']} more placement(s) evaluated ({pls.get('generated')} generated)"
            )
    elif condition and condition.get("message"):
        reasons.append(condition["message"])

    preemption = preemption_of(condition, last, preempted)
    quota_doc = None
    if quota is not None:
        spec = quota[1].get("spec") or {}
        quota_doc = {"name": quota[0], "min": spec.get("min") or {}, "max": spec.get("max"), "used": used}

    doc: dict[str, Any] = {
        "kind": kind,
        "namespace": namespace,
        "name": name,
        "job": job or owning_job(obj),
        "position": pos,
        "verdict": verdict,
        "condition": condition,
        "reasons": reasons,
        "gates": gates,
        "attempts": len(attempts),
        "lastAttempt": (
            {
                "position": last["position"],
                "type": last["type"],
                "at": last["at"].isoformat(),
                "cycle": (last["meta"] or {}).get("cycle"),
                "data": last["data"],
            }
            if last
            else None
        ),
        "preemption": preemption,
        "codes": [] if stale else list(((last or {}).get("data") or {}).get("codes") or []),
        "why": None if stale else (((last or {}).get("data") or {}).get("why") or None),
        "staleAttempt": stale,
        "reading": [] if stale else readings(condition, last, pods),
        "summary": "" if stale else summary_line(((last or {}).get("data") or {}).get("why") or {}),
        "quota": quota_doc,
        "changes": changes,
        "pods": [
            {
                "name": p[0],
                "phase": (p[2] or {}).get("phase", "Pending"),
                "node": (p[2] or {}).get("nodeName"),
                "nominatedNode": (p[2] or {}).get("nominatedNodeName"),
            }
            for p in pods
        ],
    }
    shadow = reads.shadow_section(conn, namespace, doc["pods"], pos, inputs["observed"])
    if shadow:
        doc["shadow"] = shadow
    said = reads.cluster_events(conn, kind, namespace, name, doc["pods"], pos)
    if said:
        doc["clusterEvents"] = said
    if nodes:
        keys = [f"{namespace}/{p[0]}" for p in pods if (p[2] or {}).get("phase") != "Bound"] or [
            f"{namespace}/{p[0]}" for p in pods
        ]
        # the exact state the last attempt saw: the log up to just before its decision (the
        # run's snapshot plus the earlier decisions of the same run), not the run's snapshot
        at = pos
        if last is not None:  # a retry's verdict is the one at its diagnosis position
            at = int(last["data"].get("diagnosis_position") or last["position"]) - 1
        sch = state_at(db, at)
        why_seen = ((last or {}).get("data") or {}).get("why") or None
        doc["nodes"], doc["nodeSummary"], doc["gangNodes"] = node_table(sch, keys, why_seen)
        doc["nodesAt"] = at
        data = (last or {}).get("data") or {}
        if data.get("exclusions"):
            doc["exclusions"], doc["exclusionsSource"] = data["exclusions"], "recorded"
        elif data.get("why", {}).get("domains") and kind == "PodGroup":
            doc["exclusions"] = recompute_exclusions(sch, keys, data["why"])
            doc["exclusionsSource"] = "recomputed"
    if kind != "CompositePodGroup" and any(p["phase"] == "Pending" for p in doc["pods"]):
        # issue 34: when it will start, from the ledger as of the same position
        from api.services.predict import predict

        est = predict(conn, kind, namespace, name, pos)
        if est is not None:
            doc["predictedStart"] = est.as_dict()
    return doc


def state_at(db: Database, position: int) -> Any:
    """The scheduler folded from the log up to ``position`` (its snapshot refreshed)."""
    bridge = Bridge(db, config_from(None))
    bridge.catch_up(upto=position)
    sch = bridge.scheduler
    sch.state.snap.refresh()
    return sch


def recompute_exclusions(sch: Any, pod_keys: list[str], why: dict[str, Any]) -> dict[str, Any]:
    """The per-node exclusions (``scheduler.cycle.exclusions``) of a decision written before they
    were recorded, recomputed on the state ``sch`` holds (the exact state of that cycle)."""
    from scheduler.cycle.exclusions import record_exclusions

    return record_exclusions(
        sch.state.snap,
        sch.state.pods,
        pod_keys,
        topology_key=(why.get("need") or {}).get("topologyKey"),
        domains=[d["domain"] for d in why.get("domains") or []],
        pinned=bool(why.get("pinned")),
    )


def node_table(
    sch: Any, pod_keys: list[str], why: dict[str, Any] | None = None
) -> tuple[list[dict[str, Any]], str, list[dict[str, Any]]]:
    """The gang-aware node verdicts of the given pods on the scheduler state ``sch``
    (``scheduler.gang_verdicts``: each pod placed after the ones before it): ``(rows, summary,
    per_node)``. With a topology diagnosis (``why``) the pods are placed within each listed
    domain, closest first, as the attempt and its record place them (so a node the record says
    rejected a pod never reads ``fits``); else on any node. ``rows`` are {pod, node, fits,
    plugin, reasons}: the node that accepted each pod and every node that rejected it;
    ``summary`` is the ``0/N nodes are available: ...`` line of the first pod no node accepted
    (in the closest domain); ``per_node`` says per node how many of the pods it accepted and why
    it rejected the others (per domain: saturated nodes first, then fitting, then excluded).
    """
    from scheduler.gang_verdicts import gang_node_verdicts

    nodes = sch.state.snap.nodes
    key = ((why or {}).get("need") or {}).get("topologyKey")
    listed = [d["domain"] for d in (why or {}).get("domains") or []] if key else []
    parts: list[tuple[str | None, list[Any]]] = [(None, nodes)]
    if listed:
        parts = [(dom, [n for n in nodes if n.labels.get(key) == dom]) for dom in listed]
    rows: list[dict[str, Any]] = []
    per_node: list[dict[str, Any]] = []
    summary = ""
    for dom, subset in parts:
        said, verdicts = gang_node_verdicts(subset, sch.pods(), pod_keys)
        summary = summary or (f"{dom} (closest): {said}" if dom is not None else said)
        for v in verdicts:
            rows.extend(
                {"pod": pk, "node": v.node, "fits": True, "plugin": "", "reasons": []} for pk in v.accepted
            )
            rows.extend(
                {"pod": pk, "node": v.node, "fits": False, "plugin": plugin, "reasons": list(reasons)}
                for pk, (plugin, reasons) in v.rejected.items()
            )
            per_node.append({**v.as_dict(), **({"domain": dom} if dom is not None else {})})
    return rows, summary, per_node


NODE_LIMIT = 50  # node lines render_explain prints by default (the document holds them all)


def render_explain(doc: dict[str, Any], *, limit: int | None = NODE_LIMIT) -> str:
    lines = [
        f"{doc['kind']} {doc['namespace']}/{doc['name']} (as of position {doc['position']})",
        f"  Verdict:   {doc['verdict']}",
    ]
    if doc.get("job"):
        lines.insert(1, f"  Job:       {doc['job']} (batch/v1; its controller created this {doc['kind']})")
    if doc.get("condition"):
        c = doc["condition"]
        lines.append(f"  Condition: {c.get('type')}={c.get('status')} reason={c.get('reason')}")
    if doc.get("attempts"):
        la = doc["lastAttempt"]
        lines.append(
            f"  Attempts:  {doc['attempts']} (last: {la['type']} at {la['at']}, cycle {la.get('cycle')}, "
            f"position {la['position']})"
        )
    else:
        lines.append("  Attempts:  none recorded")
    if doc.get("summary"):
        lines.append(f"  Summary:   {doc['summary']}")
    for r in doc.get("reading") or []:
        lines.append(f"  Reading:   {r}")
    if doc.get("staleAttempt"):
        lines.append("  (the last attempt's codes and diagnosis predate this verdict: see history)")
    if doc.get("codes"):
        lines.append(f"  Codes:     {', '.join(doc['codes'])}")
    if doc.get("predictedStart"):
        lines.append(render_prediction(doc["predictedStart"]))
    if doc.get("why"):
        lines.extend(render_why(doc["why"]))
    if doc.get("reasons"):
        lines.append("  Why:")
        lines.extend(f"    - {r}" for r in doc["reasons"])
    if doc.get("changes"):
        lines.extend(reads.render_changes(doc["changes"]))
    if doc.get("gates"):
        lines.append("  Waiting before any attempt (PreEnqueue; upstream shows this nowhere):")
        lines.extend(
            f"    - {g['pod']}: {g['plugin']}: {g['message']} (since {g['since']})" for g in doc["gates"]
        )
    pre = doc.get("preemption")
    if pre:
        if pre["taken"]:
            lines.append(
                f"  Preemption: taken, {len(pre['victims'])} victim(s): "
                + ", ".join(f"{v['victim']} on {v['node']} ({v['rule']})" for v in pre["victims"])
            )
        else:
            lines.append(f"  Preemption: not taken: {pre['message'] or 'n/a'}")
    q = doc.get("quota")
    if q:
        from ledger.resources.quantity import format_resources

        def fmt(res: Any) -> str:
            if res is None:
                return "unlimited"
            return ", ".join(f"{k}={v}" for k, v in format_resources(res).items()) or "-"

        lines.append(f"  Quota {q['name']}: used {fmt(q['used'])}; min {fmt(q['min'])}; max {fmt(q['max'])}")
    if doc.get("pods"):
        lines.append("  Pods:")
        for p in doc["pods"]:
            where = p["node"] or (f"nominated {p['nominatedNode']}" if p.get("nominatedNode") else "-")
            lines.append(f"    {p['name']:<32} {p['phase']:<10} {where}")
    if doc.get("shadow"):
        rows = doc["shadow"]
        n = sum(1 for r in rows if r["differs"])
        lines.append(f"  Shadow (podledger vs the cluster's scheduler): {n} of {len(rows)} pod(s) differ")
        for r in rows:
            mark = "differs" if r["differs"] else "same"
            who = r["clusterScheduler"] or "-"
            lines.append(
                f"    {r['name']:<32} podledger {r['podledgerNode'] or '-':<16} "
                f"cluster {r['clusterNode'] or '-':<16} ({who}) {mark}"
            )
    if doc.get("exclusions"):
        src = (
            "recorded with the decision"
            if doc.get("exclusionsSource") == "recorded"
            else f"recomputed on the exact state of that cycle, position {doc.get('nodesAt')}: "
            "the decision predates the record"
        )
        lines.append(f"  Exclusions (what the scheduler saw; {src}):")
        lines.extend(f"    {ln}" for ln in exclusion_lines(doc["exclusions"]))
    if doc.get("clusterEvents"):
        # the cluster scheduler's words and times, beside podledger's (shadow) or as the verdict
        # above (mirror)
        lines.append("  Cluster (its scheduler's Events, newest first):")
        for e in doc["clusterEvents"]:
            times = f" x{e['count']}" if (e.get("count") or 1) > 1 else ""
            who = e["object"].rpartition("/")[2]
            lines.append(f"    {e['lastTime']} {who} {e['type']} {e['reason']}{times}: {e['message']}")
    if doc.get("gangNodes") is not None:
        lines.extend(render_nodes(doc, limit))
    return "\n".join(lines)


def render_nodes(doc: dict[str, Any], limit: int | None) -> list[str]:
    """``explain --nodes``: the fit-error summary first, the counts per category, then one line
    per node (at most ``limit``; None: all): how many of the gang's pods it accepted, how many it
    rejected and why. ``fits`` only for a node that rejected none of them."""
    per_node = doc["gangNodes"]
    where = " per domain, closest first" if any("domain" in v for v in per_node) else " on any node"
    cats = {c: sum(1 for v in per_node if v["category"] == c) for c in ("saturated", "fits", "excluded")}
    lines = [
        f"  Nodes (gang-aware{where}, recomputed at position {doc.get('nodesAt')}): {doc.get('nodeSummary')}",
        f"    Saturated nodes ({cats['saturated']}) - accepted some gang pods, rejected others",
        f"    Excluded nodes ({cats['excluded']}) - rejected every pod",
        f"    Fitting nodes ({cats['fits']}) - rejected none",
    ]
    shown = per_node if limit is None else per_node[:limit]
    for v in shown:
        why = "; ".join(f"{n} x {r}" for r, n in v["reasons"])
        if v["fits"]:
            verdict = f"fits (accepted {v['accepted']})"
        else:
            verdict = f"accepted {v['accepted']}, rejected {v['rejected']}: {why}"
        dom = f" [{v['domain']}]" if v.get("domain") else ""
        lines.append(f"    {v['node']:<24} {verdict}{dom}")
    if len(shown) < len(per_node):
        lines.append(f"    ... {len(per_node) - len(shown)} more node(s) (use --limit 0 for all)")
    return lines


def _free(domain: dict[str, Any]) -> str:
    free = domain.get("free")
    if not free:
        return ""
    return "; free " + ", ".join(f"{k}={v}" for k, v in free.items()) + " on the nodes that admit the pods"


def render_why(why: dict[str, Any]) -> list[str]:
    """The structured group diagnosis (scheduler/cycle/why.py), whole: the requirement, each
    candidate domain best first (room, binding constraint, nodes the filters excluded) and what
    would unblock the best one; for a CompositePodGroup, the child groups that block it."""
    if "composite" in why:
        return render_composite_why(why)
    need = why.get("need") or {}
    req = ", ".join(f"{k}={v}" for k, v in (need.get("request") or {}).items()) or "nothing"
    key = need.get("topologyKey")
    where = f" in one {key} domain" if key else ""
    lines = [f"  Needs:     {need.get('pods')} pod(s) x ({req}){where}"]
    pinned = why.get("pinned")
    if pinned:
        lines.append(
            f"  Pinned:    {', '.join(pinned['domains'])}: {pinned['bound']} bound member(s) "
            "(upstream limits the group to their domain; only it is diagnosed)"
        )
    domains = why.get("domains") or []
    if domains:
        best = domains[0]
        lines.append(
            f"  Best:      {best['domain']}: room for {best['fit']} of {need.get('pods')} pod(s) "
            f"({best['nodes']} node(s)), bound by {best['binding']}{_free(best)}"
        )
        lines.append(f"  Domains ({len(domains) + int(why.get('more') or 0)}, best first):")
        for d in domains:
            excl = d.get("excluded") or {}
            note = ""
            if excl:
                note = "; excluded by filters: " + ", ".join(f"{p} {n}" for p, n in excl.items())
            lines.append(
                f"    - {d['domain']}: fits {d['fit']}/{need.get('pods')} over {d['nodes']} node(s), "
                f"binding {d['binding']}{_free(d)}{note}"
            )
        if why.get("more"):
            lines.append(f"    - …and {why['more']} more domain(s) with less room")
    if why.get("unblock"):
        lines.append(f"  Unblock:   {why['unblock']}")
    return lines


def render_composite_why(why: dict[str, Any]) -> list[str]:
    """A CompositePodGroup's diagnosis (``scheduler.cycle.why.composite_why``): each child group,
    blocking ones first, a blocking leaf with its need, best domain and unblock line."""
    children = why.get("children") or []
    total = len(children) + int(why.get("more") or 0)
    lines = [f"  Blocked by: {why.get('blocking', 0)} of {total} child group(s)"]
    for c in children:
        if not c["blocking"]:
            lines.append(f"    - {c['group']} ({c['kind']}): not blocking")
            continue
        codes = ", ".join(c.get("codes") or [])
        lines.append(
            f"    - {c['group']} ({c['kind']}): blocking{f' [{codes}]' if codes else ''}: {c['message']}"
        )
        need = c.get("need")
        if need:
            req = ", ".join(f"{k}={v}" for k, v in (need.get("request") or {}).items()) or "nothing"
            key = need.get("topologyKey")
            lines.append(
                f"        needs {need['pods']} pod(s) x ({req})" + (f" in one {key} domain" if key else "")
            )
        best = c.get("best")
        if best:
            lines.append(
                f"        best {best['domain']}: room for {best['fit']} pod(s) ({best['nodes']} node(s)), "
                f"bound by {best['binding']}{_free(best)}"
            )
        if c.get("unblock"):
            lines.append(f"        unblock: {c['unblock']}")
    if why.get("more"):
        lines.append(f"    - …and {why['more']} more child group(s)")
    if why.get("unblock"):
        lines.append(f"  Unblock:   {why['unblock']}")
    return lines


__all__ = [
    "document",
    "explain",
    "node_table",
    "read_inputs",
    "render_explain",
    "render_nodes",
    "render_why",
    "resolve_at",
]


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "not within a year"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f}{unit}"
    return f"{seconds:.0f}s"


def render_prediction(p: dict[str, Any]) -> str:
    """One line: p50 and p90 of the predicted wait from this position, and what they rest on."""
    return (
        f"  Predicted: starts in {_duration(p['p50_seconds'])} (p50), by {_duration(p['p90_seconds'])} (p90); "
        f"{p['cases']} past lifetimes ({p['censored']} running), {p['holders']} pods holding the capacity, "
        f"{p['queue_ahead']} ahead in the queue"
        + (f", closest domain {p['closest_domain']}" if p.get("closest_domain") else "")
    )
