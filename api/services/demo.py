"""The demo's report: per group its condition and where/why, per node its use and pods, and
why each pending pod waits (read after the example cluster was applied and scheduled)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ledger import streams
from ledger.queries.log import latest_placements
from ledger.queries.objects import list_objects
from ledger.resources.job import owning_job
from ledger.sql import Conn, scalar
from scheduler.edge.bridge import pod_requests

if TYPE_CHECKING:
    from ledger.database import Database

GROUP_CONDITIONS = (
    ("CompositePodGroup", "CompositePodGroupInitiallyScheduled"),
    ("PodGroup", "PodGroupInitiallyScheduled"),
)


@dataclass
class DemoReport:
    # kind -> rows (namespace, name, condition, reason, where / why)
    groups: dict[str, list[tuple[str, str, str, str, str]]] = field(default_factory=dict)
    # rows (node, rack, zone, cpu used/alloc, memory GiB used/alloc, gpu used/alloc or -, pods)
    nodes: list[tuple[str, ...]] = field(default_factory=list)
    # (namespace/name, why) of every pod without a node
    pending: list[tuple[str, str]] = field(default_factory=list)
    # (job namespace/name, its PodGroup namespace/name): groups a Job's controller compiled
    jobs: list[tuple[str, str]] = field(default_factory=list)


def _where_or_why(cond: dict[str, Any] | None, spec: dict[str, Any], placement: str | None) -> str:
    if cond and cond.get("status") == "True":
        topo = (spec.get("schedulingConstraints") or {}).get("topology") or []
        if topo:
            return f"topology {topo[0]['key']}: all pods in {placement or 'one domain'} (the best-scoring feasible domain)"
        if spec.get("parentCompositePodGroupName"):
            return f"inside the placement chosen for {spec['parentCompositePodGroupName']}"
        return "no topology constraint: best-scoring nodes"
    if cond:
        return cond.get("message", "") or ""
    return ""


# The demo's story: the gang of examples/cluster/40-blocked.yaml cannot fit until the node of
# examples/capacity/ joins.
BLOCKED_GROUP = ("team-a", "vision-pretrain")


def first_position(db: Database, kind: str, namespace: str | None, name: str) -> int | None:
    """The log position of the first event of an object's stream (None: never written)."""
    stream = streams.object_stream(kind, namespace, name)
    with db.connect() as conn:
        pos = scalar(
            conn,
            "SELECT min(position) FROM events WHERE position IN "
            "(SELECT k.position FROM event_keys k WHERE k.stream = %(s)s)",
            {"s": stream},
        )
    return int(pos) if pos is not None else None


def demo_report(db: Database) -> DemoReport:
    """What the demo prints after scheduling: groups, nodes and pending pods."""
    with db.snapshot() as conn:  # one pooled connection and one snapshot for every read
        return _report(conn)


def _report(conn: Conn) -> DemoReport:
    report = DemoReport()
    placements = latest_placements(conn)
    for kind, ctype in GROUP_CONDITIONS:
        rows = list_objects(conn, kind)
        if not rows:
            continue
        table = report.groups.setdefault(kind, [])
        for r in rows:
            job = owning_job(r.object)
            if job:
                report.jobs.append((job, f"{r.namespace}/{r.name}"))
            cond = next((c for c in r.status.get("conditions") or [] if c.get("type") == ctype), None)
            if cond is None:
                table.append((r.namespace, r.name, "(not attempted)", "", ""))
                continue
            why = _where_or_why(cond, r.object.get("spec") or {}, placements.get(f"{r.namespace}/{r.name}"))
            table.append((r.namespace, r.name, f"{ctype}={cond['status']}", cond.get("reason", ""), why))
    pods = list_objects(conn, "Pod")
    placed: dict[str, list[str]] = {}
    used_by_node: dict[str, dict[str, int]] = {}
    for p in pods:
        if p.status.get("phase") == "Bound":
            node = p.status["nodeName"]
            placed.setdefault(node, []).append(f"{p.namespace}/{p.name}")
            used = used_by_node.setdefault(node, {})
            for k, v in pod_requests(p.object.get("spec") or {}).items():
                used[k] = used.get(k, 0) + v
    for n in list_objects(conn, "Node"):
        labels = (n.object.get("metadata") or {}).get("labels") or {}
        alloc = (n.object.get("status") or {}).get("allocatable") or {}
        used = used_by_node.get(n.name, {})
        report.nodes.append(
            (
                n.name,
                labels.get("topology.kubernetes.io/rack") or labels.get("rack") or "",
                labels.get("topology.kubernetes.io/zone") or labels.get("zone") or "",
                f"{used.get('cpu', 0) / 1000:g}/{alloc.get('cpu', 0) / 1000:g}",
                f"{used.get('memory', 0) / 2**30:.0f}/{alloc.get('memory', 0) / 2**30:.0f}",
                f"{used.get('nvidia.com/gpu', 0)}/{alloc.get('nvidia.com/gpu', 0)}"
                if alloc.get("nvidia.com/gpu")
                else "-",
                ", ".join(sorted(placed.get(n.name, []))),
            )
        )
    for p in pods:
        if p.status.get("phase") == "Bound":
            continue
        cond = next((c for c in p.status.get("conditions") or [] if c.get("type") == "PodScheduled"), None)
        gated = p.status.get("gated")
        why = (cond or {}).get("message") or (gated or {}).get("message") or "not attempted yet"
        report.pending.append((f"{p.namespace}/{p.name}", why))
    return report


__all__ = ["BLOCKED_GROUP", "DemoReport", "demo_report", "first_position"]
