"""``podledger schedule | simulate | demo``."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
import yaml
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from api.cli import UserError, app, err, out


def _current_config(engine: Any) -> Any:
    from api.services import list_objects
    from scheduler.bridge import config_from

    rows = list_objects(engine, "SchedulerConfig")
    return config_from(rows[0].object if rows else None)


def schedule_until_idle(engine: Any, *, progress: bool = True) -> list[Any]:
    """Fold the log into a fresh scheduler and run cycles until idle, appending decisions."""
    from scheduler.bridge import Bridge

    bridge = Bridge(engine, _current_config(engine), actor="cli")
    bridge.catch_up()
    pending = sum(1 for p in bridge.scheduler.pods() if not p.node_name)
    results: list[Any] = []
    with Progress(
        TextColumn("scheduling"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("pending pods"),
        TimeElapsedColumn(),
        console=err,
        disable=not progress,
        transient=True,
    ) as bar:
        task = bar.add_task("cycles", total=max(pending, 1))

        def tick(res: Any) -> None:
            bound = sum(1 for dec in res.decisions if type(dec).__name__ == "PodBound")
            bar.advance(task, bound)

        bridge.on_cycle = tick
        results = bridge.run_until_idle(time.time())
    return results


@app.command()
def schedule(
    until_idle: Annotated[
        bool, typer.Option("--until-idle", help="Run cycles until nothing more can change.")
    ] = True,
) -> None:
    """Run scheduling cycles over the current state; decisions are appended to the log."""
    from api.cli import _engine

    engine = _engine()
    t0 = time.perf_counter()
    results = schedule_until_idle(engine, progress=sys.stderr.isatty())
    counts: dict[str, int] = {}
    for r in results:
        counts[r.result] = counts.get(r.result, 0) + 1
    bound = sum(1 for r in results for dec in r.decisions if type(dec).__name__ == "PodBound")
    summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "nothing to do"
    out.print(f"{len(results)} cycles ({summary}); {bound} pods bound in {time.perf_counter() - t0:.2f}s")


@app.command()
def simulate(
    scenario: Annotated[Path, typer.Argument(help="Scenario YAML file (kind: Scenario).")],
    output: Annotated[str, typer.Option("-o", "--output", help="text | json")] = "text",
) -> None:
    """Run a scenario on a fresh private ledger; exit 1 when an expectation fails."""
    from api.simulate import ScenarioError, run_scenario

    if not scenario.exists():
        raise UserError(f"{scenario}: no such file")
    try:
        docs = [doc for doc in yaml.safe_load_all(scenario.read_text()) if doc]
    except yaml.YAMLError as exc:
        raise UserError(f"{scenario}: invalid YAML: {exc}") from None
    if len(docs) != 1:
        raise UserError(f"{scenario}: expected exactly one Scenario document, found {len(docs)}")
    try:
        report = run_scenario(docs[0])
    except ScenarioError as exc:
        raise UserError(f"{scenario}: {exc}") from None
    if output == "json":
        sys.stdout.write(orjson.dumps(report.to_json(), option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        status = "PASSED" if report.passed else "FAILED"
        out.print(f"scenario {report.scenario}: {status} ({report.events} events)")
        for f in report.failures:
            out.print(f"  - {f}")
    if not report.passed:
        raise typer.Exit(1)


@app.command()
def demo(
    examples: Annotated[Path, typer.Option(help="Manifests to apply.")] = Path("examples/cluster"),
) -> None:
    """The main job: embedded database, the example cluster, scheduling, a report."""
    from api.cli import _engine
    from api.services import apply_objects, list_objects, load_documents
    from ledger import db, store
    from ledger.resources.parse import iter_path

    if not examples.exists():
        raise UserError(f"{examples}: not found (run from the repository root)")
    engine = _engine()
    out.print(
        f"podledger demo — ledger: {db.database_name(db.server_url())} (head position {store.head(engine)})"
    )
    objects, errors = load_documents(iter_path(examples))
    if errors:
        for e in errors:
            err.print(e)
        raise typer.Exit(1)
    res = apply_objects(engine, objects, actor="demo", source=str(examples))
    if res.rejected:
        for e in res.errors:
            err.print(e)
        raise typer.Exit(1)
    changed = sum(1 for line in res.lines if not line.endswith("unchanged"))
    out.print(
        f"applied {len(objects)} objects from {examples} ({changed} created or updated, {len(objects) - changed} unchanged)"
    )
    results = schedule_until_idle(engine, progress=False)
    bound = sum(1 for r in results for dec in r.decisions if type(dec).__name__ == "PodBound")
    out.print(
        f"ran {len(results)} scheduling cycles, {bound} pods bound; log head is now {store.head(engine)}\n"
    )

    import sqlalchemy as sa

    with engine.connect() as conn:
        placements = {row[0]: row[1] for row in conn.execute(sa.text(
            "SELECT DISTINCT ON (data->>'group') data->>'group', data->>'placement' FROM events "
            "WHERE type = 'PodGroupScheduled' ORDER BY data->>'group', position DESC"))}
    for kind, ctype in (("CompositePodGroup", "CompositePodGroupInitiallyScheduled"), ("PodGroup", "PodGroupInitiallyScheduled")):
        rows = list_objects(engine, kind)
        if not rows:
            continue
        table = Table(title=f"{kind}s", title_justify="left")
        for c in ("NAMESPACE", "NAME", "CONDITION", "REASON", "WHERE / WHY"):
            table.add_column(c)
        for r in rows:
            cond = next((c for c in r.status.get("conditions") or [] if c.get("type") == ctype), None)
            spec = r.object.get("spec") or {}
            topo = (spec.get("schedulingConstraints") or {}).get("topology") or []
            why = ""
            if cond and cond.get("status") == "True":
                where = placements.get(f"{r.namespace}/{r.name}")
                if topo:
                    why = f"topology {topo[0]['key']}: all pods in {where or 'one domain'} (the best-scoring feasible domain)"
                elif spec.get("parentCompositePodGroupName"):
                    why = f"inside the placement chosen for {spec['parentCompositePodGroupName']}"
                else:
                    why = "no topology constraint: best-scoring nodes"
            elif cond:
                why = cond.get("message", "") or ""
            if cond:
                table.add_row(r.namespace, r.name, f"{ctype}={cond['status']}", cond.get("reason", ""), why)
            else:
                table.add_row(r.namespace, r.name, "(not attempted)", "", "")
        out.print(table)

    pods = list_objects(engine, "Pod")
    placed: dict[str, list[str]] = {}
    for p in pods:
        if p.status.get("phase") == "Bound":
            placed.setdefault(p.status["nodeName"], []).append(f"{p.namespace}/{p.name}")
    nodes = list_objects(engine, "Node")
    table = Table(title="Nodes", title_justify="left")
    for c in ("NODE", "RACK", "ZONE", "CPU (used/alloc)", "MEMORY (GiB)", "GPU", "PODS"):
        table.add_column(c)
    for n in nodes:
        labels = (n.object.get("metadata") or {}).get("labels") or {}
        alloc = (n.object.get("status") or {}).get("allocatable") or {}
        used: dict[str, int] = {}
        for p in pods:
            if p.status.get("phase") == "Bound" and p.status.get("nodeName") == n.name:
                from scheduler.bridge import pod_requests

                for k, v in pod_requests(p.object.get("spec") or {}).items():
                    used[k] = used.get(k, 0) + v
        rack = labels.get("topology.kubernetes.io/rack") or labels.get("rack") or ""
        zone = labels.get("topology.kubernetes.io/zone") or labels.get("zone") or ""
        table.add_row(
            n.name,
            rack,
            zone,
            f"{used.get('cpu', 0) / 1000:g}/{alloc.get('cpu', 0) / 1000:g}",
            f"{used.get('memory', 0) / 2**30:.0f}/{alloc.get('memory', 0) / 2**30:.0f}",
            f"{used.get('nvidia.com/gpu', 0)}/{alloc.get('nvidia.com/gpu', 0)}"
            if alloc.get("nvidia.com/gpu")
            else "-",
            ", ".join(sorted(placed.get(n.name, []))),
        )
    out.print(table)
    pending = [p for p in pods if p.status.get("phase") != "Bound"]
    if pending:
        out.print(f"\n{len(pending)} pods pending:")
        for p in pending:
            cond = next(
                (c for c in p.status.get("conditions") or [] if c.get("type") == "PodScheduled"), None
            )
            gated = p.status.get("gated")
            why = (cond or {}).get("message") or (gated or {}).get("message") or "not attempted yet"
            out.print(f"  {p.namespace}/{p.name}: {why}")
    out.print("\nTry: podledger get pods -o wide · podledger log --limit 20 · podledger verify")


@app.command()
def worker(
    interval: Annotated[float, typer.Option(help="Seconds between ticks (LISTEN/NOTIFY wakes it earlier).")] = 1.0,
    name: Annotated[str | None, typer.Option(help="Worker name for logs and event meta.")] = None,
) -> None:
    """Run the leader-elected scheduler worker until SIGTERM."""
    from scheduler.worker import main as worker_main

    raise typer.Exit(worker_main(interval=interval, name=name))
