"""``podledger apply | get | delete``: kubectl-like commands over the ledger."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from rich.table import Table

from api.cli.console import UserError, app, engine, err, out, split_ref


def _age(ts: datetime) -> str:
    secs = max(0, int((datetime.now(UTC) - ts).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= size:
            return f"{secs // size}{unit}"
    return f"{secs}s"


def _iter_sources(files: list[str]):  # type: ignore[no-untyped-def]
    from ledger.resources.parse import iter_documents, iter_path

    for f in files:
        if f == "-":
            yield from iter_documents(sys.stdin, "-")
        else:
            p = Path(f)
            if not p.exists():
                raise UserError(f"{f}: no such file or directory")
            yield from iter_path(p)


@app.command()
def apply(
    filename: Annotated[
        list[str], typer.Option("-f", "--filename", help="File, directory (recursive) or - for stdin.")
    ],
) -> None:
    """Create or update objects from YAML/JSON manifests (one transaction for everything)."""
    from api.services.objects import apply_objects, load_documents

    objects, errors = load_documents(_iter_sources(filename))
    if errors:
        for e in errors:
            err.print(e if e.startswith("error:") else f"error: {e}")
        err.print(f"nothing applied: {len(errors)} error(s)")
        raise typer.Exit(1)
    if not objects:
        err.print("error: no objects passed to apply")
        raise typer.Exit(1)
    result = apply_objects(engine(), objects, actor="cli", source=",".join(filename))
    if result.rejected:
        for e in result.errors:
            err.print(e)
        err.print("nothing applied: the request was refused by admission (recorded as AdmissionRejected)")
        raise typer.Exit(1)
    for line in result.lines:
        out.print(line)


@app.command()
def delete(kind: str, ref: Annotated[str, typer.Argument(metavar="NAMESPACE/NAME")]) -> None:
    """Delete one object."""
    from api.services.objects import delete_object, kind_info

    info = kind_info(kind)
    ns, name = split_ref(ref)
    assert name is not None
    try:
        delete_object(engine(), info.kind, ns, name)
    except LookupError as exc:
        raise UserError(str(exc).strip("'\"")) from None
    out.print(f"{info.display(name)} deleted")


def _status_of(kind: str, row: Any) -> tuple[str, str]:
    st = row.status or {}
    if kind == "Pod":
        phase = st.get("phase") or "Pending"
        if phase == "Pending" and st.get("gated"):
            phase = "Pending (gated)"
        return phase, st.get("nodeName") or "<none>"
    if kind in ("PodGroup", "CompositePodGroup"):
        for c in st.get("conditions") or []:
            if c.get("type", "").endswith("InitiallyScheduled"):
                return (c.get("reason") or c.get("status") or "-"), ""
        return "Pending", ""
    if kind == "Node":
        return ("SchedulingDisabled" if (row.object.get("spec") or {}).get("unschedulable") else "Ready"), ""
    return "", ""


@app.command()
def get(
    kind: str,
    ref: Annotated[str | None, typer.Argument(metavar="[NAMESPACE/NAME]")] = None,
    output: Annotated[str, typer.Option("-o", "--output", help="wide | json | yaml")] = "",
    all_namespaces: Annotated[bool, typer.Option("-A", "--all-namespaces")] = True,
) -> None:
    """List objects (kubectl-like table) or print them as JSON/YAML."""
    from api.services.objects import dumps, kind_info, list_objects
    from ledger.resources.manifest import to_manifest

    info = kind_info(kind)
    ns, name = split_ref(ref)
    if name and info.namespaced and ns is None:
        ns = "default"
    rows = list_objects(engine(), info.kind, (ns or "") if (ns or not info.namespaced) and name else ns, name)
    if name and not rows:
        where = f"{ns}/{name}" if info.namespaced else name
        raise UserError(f'{info.kind} "{where}" not found')
    if output in ("json", "yaml"):
        items = [to_manifest(r.full()) for r in rows]  # quantities as kubectl writes them
        doc: Any = items[0] if name else {"apiVersion": "v1", "kind": "List", "items": items}
        if output == "json":
            sys.stdout.write(dumps(doc) + "\n")
        else:
            sys.stdout.write(yaml.safe_dump(doc, sort_keys=False))
        return
    if output not in ("", "wide"):
        raise UserError(f"unknown output format {output!r} (use wide, json or yaml)")
    table = Table(box=None, pad_edge=False)
    cols = (["NAMESPACE"] if info.namespaced else []) + ["NAME", "STATUS"]
    if info.kind == "Pod":
        cols += ["NODE"]
    cols += ["AGE"]
    if output == "wide":
        cols += ["DETAIL"]
    for c in cols:
        table.add_column(c)
    for r in rows:
        status, node = _status_of(info.kind, r)
        cells = ([r.namespace] if info.namespaced else []) + [r.name, status]
        if info.kind == "Pod":
            cells.append(node)
        cells.append(_age(r.created_at))
        if output == "wide":
            detail = ""
            if info.kind == "Pod":
                g = (r.object.get("spec") or {}).get("schedulingGroup") or {}
                detail = (
                    f"group={g.get('podGroupName', '-')} nominated={r.status.get('nominatedNodeName') or '-'}"
                )
            elif info.kind in ("PodGroup", "CompositePodGroup"):
                conds = r.status.get("conditions") or []
                detail = "; ".join(c.get("message", "") for c in conds)[:120]
            cells.append(detail)
        table.add_row(*cells)
    if not rows:
        err.print(f"No {info.plural} found.")
        return
    out.print(table)
