"""``podledger explain | history | replay``: the audit trail."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from api.cli.console import UserError, app, database, err, out, read_database
from api.cli.printer import Table


def _ref(ref: str) -> tuple[str, str]:
    if "/" in ref:
        ns, name = ref.split("/", 1)
        return ns, name
    return "default", ref


@app.command()
def explain(
    kind: Annotated[str, typer.Argument(help="podgroup | compositepodgroup | pod")],
    ref: Annotated[str, typer.Argument(metavar="NAMESPACE/NAME")],
    at: Annotated[
        str | None, typer.Option("--at", help="A log position or an ISO time (default: now).")
    ] = None,
    nodes: Annotated[
        bool, typer.Option("--nodes", help="Recompute the per-node × per-plugin table.")
    ] = False,
    output: Annotated[str, typer.Option("-o", "--output", help="text | json")] = "text",
    limit: Annotated[
        int, typer.Option("--limit", help="Node lines printed with --nodes (0: all).", min=0)
    ] = 50,
) -> None:
    """Why is this group or pod where it is (as of a position or time)?"""
    import orjson

    from api.services.explain import explain as do_explain
    from api.services.explain import render_explain

    ns, name = _ref(ref)
    try:
        doc = do_explain(read_database(), kind, ns, name, at=at, nodes=nodes)
    except (LookupError, ValueError) as exc:
        raise UserError(str(exc).strip("'\"")) from None
    if output == "json":
        sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2, default=str).decode() + "\n")
    else:
        out.print(render_explain(doc, limit=limit or None))


@app.command()
def history(
    kind: str,
    ref: Annotated[str, typer.Argument(metavar="NAMESPACE/NAME")],
    output: Annotated[str, typer.Option("-o", "--output", help="table | json")] = "table",
) -> None:
    """The object's timeline: its events and the scheduler's decisions about it."""
    import orjson

    from api.services.history import history as do_history

    ns, name = _ref(ref)
    try:
        rows = do_history(read_database(), kind, ns, name)
    except LookupError as exc:
        raise UserError(str(exc).strip("'\"")) from None
    if output == "json":
        sys.stdout.write(orjson.dumps(rows, option=orjson.OPT_INDENT_2).decode() + "\n")
        return
    table = Table("POS", "T", "TYPE", "WHAT", wrap_last=True)  # whole summaries, wrapped
    for r in rows:
        table.add_row(str(r["position"]), r["relative"], r["type"], r["summary"])
    out.print(table)


@app.command()
def replay(
    to: Annotated[
        str | None, typer.Option("--to", help="Rebuild state as of a position or ISO time.")
    ] = None,
    verify: Annotated[
        bool, typer.Option("--verify", help="Re-run every recorded run; report mismatches.")
    ] = False,
    config: Annotated[
        Path | None, typer.Option("--config", help="SchedulerConfig file for a what-if.")
    ] = None,
    diff: Annotated[bool, typer.Option("--diff", help="With --config: print what changes.")] = False,
    output: Annotated[str, typer.Option("-o", "--output", help="text | json")] = "text",
) -> None:
    """Time travel, proof of every decision, and what-if under another configuration."""
    import orjson

    from api.services.replay import SCHEDULER_VERSION, verify_replay
    from api.services.state import state_at
    from api.services.whatif import whatif

    target = database()
    if config is not None:
        if not config.exists():
            raise UserError(f"{config}: no such file")
        from ledger.resources.bounded import load_yaml_values
        from ledger.resources.errors import DocumentParseError

        try:  # bounded: a duplicate key or an alias bomb is refused
            values = load_yaml_values(config.read_text(), str(config))
        except DocumentParseError as exc:
            raise UserError(f"{config}: invalid YAML: {exc.problem}") from None
        doc = (values[0] if values else None) or {}
        spec = doc.get("spec", doc) if isinstance(doc, dict) else {}
        res = whatif(target, spec)
        if output == "json" or not diff:
            sys.stdout.write(orjson.dumps(res, option=orjson.OPT_INDENT_2).decode() + "\n")
            return
        out.print(f"what-if under {config}: {len(res['changed'])} group(s) changed")
        for c in res["changed"]:
            b, a = c["before"], c["after"]
            delta = f", wait {c['waitDelta']:+.0f}s" if c["waitDelta"] is not None else ""
            out.print(f"  {c['group']}: {b['status']}/{b['reason']} -> {a['status']}/{a['reason']}{delta}")
        out.print(
            f"  preemptions added: {res['preemptionsAdded'] or 'none'}; avoided: {res['preemptionsAvoided'] or 'none'}"
        )
        from api.services.placement_diff import render

        for line in render(res["placements"]):
            out.print(line)
        return
    if verify:
        rep = verify_replay(
            target, progress=lambda r: err.print(f"  verified {r.runs} runs…") if r.runs % 200 == 0 else None
        )
        if output == "json":
            sys.stdout.write(
                orjson.dumps(
                    {
                        "runs": rep.runs,
                        "cycles": rep.cycles,
                        "decisions": rep.decisions,
                        "mismatches": rep.mismatches,
                        "otherVersions": rep.other_versions,
                    },
                    option=orjson.OPT_INDENT_2,
                    default=str,
                ).decode()
                + "\n"
            )
        else:
            out.print(
                f"replayed {rep.runs} scheduling runs ({rep.cycles} cycles, {rep.decisions} events): "
                f"{len(rep.mismatches)} mismatches"
            )
            for version, n in sorted(rep.other_versions.items()):
                out.print(
                    f"  {n} runs recorded by {version} decide otherwise under {SCHEDULER_VERSION} "
                    "(the scheduler changed; not mismatches)"
                )
            for mm in rep.mismatches[:20]:
                out.print(
                    f"  at position {mm['position']}: recorded {mm.get('recorded')} replayed {mm.get('replayed')}"
                )
        if not rep.ok:
            raise typer.Exit(1)
        return
    state = state_at(target, to)
    if output == "json":
        sys.stdout.write(orjson.dumps(state, option=orjson.OPT_INDENT_2).decode() + "\n")
        return
    counts: dict[str, int] = {}
    for o in state["objects"]:
        counts[o["kind"]] = counts.get(o["kind"], 0) + 1
    out.print(
        f"state as of position {state['position']}: "
        + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    )
    bound = [o for o in state["objects"] if o["kind"] == "Pod" and o["status"].get("phase") == "Bound"]
    out.print(
        f"{len(bound)} pods bound; use `podledger get KIND --at POSITION` or `explain --at` for details"
    )
