"""``podledger schedule | simulate | demo``."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from api.cli.console import UserError, app, database, err, out

if TYPE_CHECKING:
    from ledger.database import Database


def schedule_until_idle(target: Database, *, progress: bool = True) -> list[Any]:
    """Run cycles until idle (``api.services.schedule``), with a progress bar on stderr when
    ``progress`` and stderr is a terminal."""
    from api.services.schedule import bound_count
    from api.services.schedule import schedule_until_idle as run

    if not (progress and err.is_terminal()):
        return run(target, actor="cli")
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("scheduling"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("pending pods"),
        TimeElapsedColumn(),
        console=err.console,
        transient=True,
    ) as bar:
        task = bar.add_task("cycles", total=1)
        return run(
            target,
            actor="cli",
            on_start=lambda pending: bar.update(task, total=max(pending, 1)),
            on_cycle=lambda res: bar.advance(task, bound_count(res)),
        )


@app.command()
def schedule(
    until_idle: Annotated[
        bool, typer.Option("--until-idle", help="Run cycles until nothing more can change.")
    ] = True,
) -> None:
    """Run scheduling cycles over the current state; decisions are appended to the log."""
    from api.services.schedule import bound_count

    t0 = time.perf_counter()
    results = schedule_until_idle(database())
    counts: dict[str, int] = {}
    for r in results:
        counts[r.result] = counts.get(r.result, 0) + 1
    bound = sum(bound_count(r) for r in results)
    summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "nothing to do"
    out.print(f"{len(results)} cycles ({summary}); {bound} pods bound in {time.perf_counter() - t0:.2f}s")


@app.command()
def simulate(
    scenario: Annotated[Path, typer.Argument(help="Scenario YAML file (kind: Scenario).")],
    output: Annotated[str, typer.Option("-o", "--output", help="text | json")] = "text",
) -> None:
    """Run a scenario on a fresh private ledger; exit 1 when an expectation fails."""
    import orjson

    from api.services.simulate import ScenarioError, run_scenario
    from ledger.resources.bounded import load_yaml_values
    from ledger.resources.errors import DocumentParseError

    if not scenario.exists():
        raise UserError(f"{scenario}: no such file")
    try:
        docs = [doc for doc in load_yaml_values(scenario.read_text(), str(scenario)) if doc]
    except DocumentParseError as exc:  # malformed, a duplicate key, excessive aliasing
        raise UserError(f"{scenario}: invalid YAML: {exc.problem}") from None
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


def _apply_dir(target: Database, path: Path, actor: str) -> tuple[int, int, int]:
    """Apply every manifest under ``path`` as one unit of work: (manifests, objects created or
    updated, objects unchanged), the objects counting the ones a controller compiled from them
    (a Job's Workload, PodGroup and pods); exit 1 on errors (a refusal by admission is recorded
    as AdmissionRejected)."""
    from api.services.commands.objects import apply_objects
    from api.services.objects import load_documents
    from ledger.resources.parse import iter_path

    objects, errors = load_documents(iter_path(path))
    if errors:
        for e in errors:
            err.print(e)
        raise typer.Exit(1)
    with target.unit_of_work() as uow:
        res = apply_objects(uow, objects, actor=actor, source=str(path))
        uow.commit()
    if res.rejected:
        for e in res.errors:
            err.print(e)
        raise typer.Exit(1)
    unchanged = sum(1 for line in res.lines if line.endswith("unchanged"))
    return len(objects), len(res.lines) - unchanged, unchanged


@app.command()
def demo(
    examples: Annotated[Path, typer.Option(help="Manifests to apply.")] = Path("examples/cluster"),
    capacity: Annotated[Path, typer.Option(help="Manifests of the capacity that joins mid-story.")] = Path(
        "examples/capacity"
    ),
) -> None:
    """The story in a minute: a gang that cannot fit, why (explain), capacity joins, it is
    scheduled, its history, and the proof that every decision replays."""
    from api.cli.audit import history, replay
    from api.cli.printer import Table
    from api.services.demo import BLOCKED_GROUP, demo_report, first_position
    from api.services.explain import explain, render_explain
    from api.services.log import head as log_head
    from api.services.schedule import bound_count
    from ledger import db

    for path in (examples, capacity):
        if not path.exists():
            raise UserError(f"{path}: not found (run from the repository root)")
    target = database()
    out.print(
        f"podledger demo — ledger: {db.database_name(db.server_url())} (head position {log_head(target)})"
    )
    n, changed, unchanged = _apply_dir(target, examples, "demo")
    out.print(
        f"applied {n} manifests from {examples}: {changed + unchanged} objects with the ones a Job's "
        f"controller compiled ({changed} created or updated, {unchanged} unchanged)"
    )
    results = schedule_until_idle(target, progress=False)
    bound = sum(bound_count(r) for r in results)
    out.print(
        f"ran {len(results)} scheduling cycles, {bound} pods bound; log head is now {log_head(target)}\n"
    )

    report = demo_report(target)
    for kind, rows in report.groups.items():
        table = Table("NAMESPACE", "NAME", "CONDITION", "REASON", title=f"{kind}s")
        for row in rows:
            table.add_row(*row[:4])
        out.print(table)
    for job, group in report.jobs:
        out.print(f"Job {job} (batch/v1, .spec.scheduling) → PodGroup {group}  (podledger explain job {job})")
    table = Table("NODE", "RACK", "ZONE", "CPU (used/alloc)", "MEMORY (GiB)", "GPU", "PODS", title="Nodes")
    for node in report.nodes:
        table.add_row(*node)
    out.print(table)

    ns, name = BLOCKED_GROUP
    ref = f"{ns}/{name}"
    # On a ledger that already holds the story, explain as of the moment before capacity joined.
    joined = [
        p
        for d in sorted(capacity.glob("*.yaml"))
        if (p := first_position(target, "Node", None, d.stem)) is not None
    ]
    at = min(joined) - 1 if joined else None
    out.print(f"\n── 1. Why is {ref} pending?  (podledger explain podgroup {ref})")
    out.print(render_explain(explain(target, "podgroup", ns, name, at=at)))

    blocked_at = at if at is not None else log_head(target)
    out.print(f"\n── 2. Capacity joins: apply -f {capacity}, then schedule")
    n, changed, _ = _apply_dir(target, capacity, "demo")
    results = schedule_until_idle(target, progress=False)
    out.print(
        f"applied {n} object(s) ({changed} created or updated); "
        f"{len(results)} cycles, {sum(bound_count(r) for r in results)} pods bound"
    )
    doc = explain(target, "podgroup", ns, name)
    out.print(f"{ref}: {doc['verdict']}")
    for p in doc.get("pods") or []:
        out.print(f"  {p['name']:<24} {p['phase']:<8} {p['node'] or '-'}")

    out.print(f"\n── 3. Its history  (podledger history podgroup {ref})")
    history("podgroup", ref, output="table")

    out.print("\n── 4. Every decision replays  (podledger replay --verify)")
    replay(to=None, verify=True, config=None, diff=False, output="text")

    out.print(
        "\nTry next:\n"
        "  podledger get pods -n team-a -l app=vision-pretrain -o wide\n"
        f"  podledger explain podgroup {ref} --at {blocked_at}\n"
        "  podledger db shell --role reporting -c "
        '"SELECT namespace, name, round(wait_seconds) AS wait_s FROM v_group_wait_times ORDER BY 3 DESC"'
    )


@app.command()
def worker(
    interval: Annotated[
        float, typer.Option(help="Seconds between ticks (LISTEN/NOTIFY wakes it earlier).")
    ] = 1.0,
    name: Annotated[str | None, typer.Option(help="Worker name for logs and event meta.")] = None,
) -> None:
    """Run the leader-elected scheduler worker until SIGTERM.

    With PODLEDGER_PREDICT_INTERVAL set (seconds, e.g. 60; unset or 0, the default: off), while
    leading it also refreshes the predicted starts v_pending_now shows (the first
    PODLEDGER_PREDICT_LIMIT pending entities, default 20, within PODLEDGER_PREDICT_BUDGET seconds,
    default 10; docs/prediction.md); `podledger predictions refresh` does it on demand."""
    from api.services.pending_predictions import configured_interval, worker_refresh
    from scheduler.edge.worker import main as worker_main

    raise typer.Exit(
        worker_main(
            interval=interval, name=name, predictions=worker_refresh, predict_interval=configured_interval()
        )
    )
