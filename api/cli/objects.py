"""``podledger apply | get | delete``: kubectl-like commands over the ledger."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, Any, cast

import typer

from api.cli.console import UserError, app, database, err, out, read_database, split_ref, tracked_write
from api.cli.printer import Table

if TYPE_CHECKING:
    from ledger.database import Database


def _age(ts: datetime) -> str:
    secs = max(0, int((datetime.now(UTC) - ts).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= size:
            return f"{secs // size}{unit}"
    return f"{secs}s"


def _iter_sources(files: list[str], limit: int):  # type: ignore[no-untyped-def]
    """Documents of every source, refusing more than ``limit`` bytes in total (like the API's
    body limit): files are measured before anything is read, stdin is counted while it is read."""
    from api.http.limits import human_size
    from ledger.resources.parse import CappedText, iter_documents, iter_path, manifest_files

    total = 0
    for f in files:
        if f != "-":
            p = Path(f)
            if not p.exists():
                raise UserError(f"{f}: no such file or directory")
            total += sum(m.stat().st_size for m in manifest_files(p))
    if total > limit:
        raise UserError(
            f"the manifests are {total / 2**20:.1f} MiB, over the {human_size(limit)} limit of one apply "
            "(split them, or raise it with --max-bytes or PODLEDGER_MAX_BODY)"
        )
    spent = [total]
    for f in files:
        if f == "-":
            capped = cast("IO[str]", CappedText(sys.stdin, limit, "-", spent))  # read() is all it uses
            yield from iter_documents(capped, "-")
        else:
            yield from iter_path(Path(f))


DRY_RUN_HELP = (
    "none: apply; server: validate, admit and project in a transaction that is rolled back "
    "(nothing is appended); client: validate the manifests only, without the ledger."
)
VALIDATE_HELP = (
    "strict (default, also true): unknown or misspelled fields are errors; warn: warnings; "
    "false (also ignore): unknown fields are dropped silently."
)


def _dry_run_mode(value: str) -> str:
    if value not in ("none", "server", "client"):
        raise UserError(f'--dry-run must be "none", "server" or "client", not {value!r}')
    return value


def _validate_mode(value: str) -> str:
    mode = {"true": "strict", "ignore": "false"}.get(value.lower(), value.lower())
    if mode not in ("strict", "warn", "false"):
        raise UserError(f'--validate must be "strict", "warn", "true", "false" or "ignore", not {value!r}')
    return mode


def _checked(docs: Any, mode: str, problems: list[tuple[str, str]]) -> Any:
    """Documents passed through, with each one's unknown fields noted (``api.services.fields``)."""
    from api.services.fields import unknown_field_messages

    for doc in docs:
        if mode != "false" and doc.kind and doc.api_version:
            for message in unknown_field_messages(doc.raw, kind=doc.kind, api_version=doc.api_version):
                who = f"{doc.kind} {doc.namespace + '/' if doc.namespace else ''}{doc.name}"
                problems.append((f"{doc.location}: {who}", message))
        yield doc


@app.command()
def apply(
    filename: Annotated[
        list[str], typer.Option("-f", "--filename", help="File, directory (recursive) or - for stdin.")
    ],
    max_bytes: Annotated[
        str | None,
        typer.Option(
            "--max-bytes",
            help="Refuse more input than this (bytes, or with Ki/Mi/Gi); default PODLEDGER_MAX_BODY "
            "or 3Mi, the API's body limit.",
        ),
    ] = None,
    dry_run: Annotated[str, typer.Option("--dry-run", help=DRY_RUN_HELP)] = "none",
    validate: Annotated[str, typer.Option("--validate", help=VALIDATE_HELP)] = "strict",
) -> None:
    """Create or update objects from YAML/JSON manifests (one transaction for everything)."""
    from api.http.limits import max_body_from_env, parse_size
    from api.services.commands.objects import apply_objects
    from api.services.objects import kind_info, load_documents

    try:
        limit = parse_size(max_bytes) if max_bytes is not None else max_body_from_env()
    except ValueError as exc:
        raise UserError(f"--max-bytes: {exc}" if max_bytes is not None else str(exc)) from None
    mode, check = _dry_run_mode(dry_run), _validate_mode(validate)
    unknown: list[tuple[str, str]] = []
    objects, errors = load_documents(_checked(_iter_sources(filename, limit), check, unknown))
    if check == "strict":
        errors += [f"{where}: strict decoding error: {u}" for where, u in unknown]
    else:
        for where, u in unknown:
            err.print(f"Warning: {where}: {u}")
    if errors:
        for e in errors:
            err.error(e.removeprefix("error: "))
        err.print(f"nothing applied: {len(errors)} error(s)")
        raise typer.Exit(1)
    if not objects:
        err.error("no objects passed to apply")
        raise typer.Exit(1)
    if mode == "client":
        for o in objects:
            out.print(f"{kind_info(o.KIND).display(o.name)} validated (dry run)")
        return
    with tracked_write(), database().unit_of_work(dry_run=mode == "server") as uow:
        result = apply_objects(uow, objects, actor="cli", source=",".join(filename))
        uow.commit()  # a refusal too: its AdmissionRejected is recorded (rolled back in a dry run)
    if result.rejected:
        for e in result.errors:
            err.print(e)
        recorded = "a dry run: nothing recorded" if mode == "server" else "recorded as AdmissionRejected"
        err.print(f"nothing applied: the request was refused by admission ({recorded})")
        raise typer.Exit(1)
    for line in result.lines:
        out.print(line + (" (server dry run)" if mode == "server" else ""))


@app.command()
def delete(
    kind: str,
    ref: Annotated[str, typer.Argument(metavar="NAMESPACE/NAME")],
    dry_run: Annotated[str, typer.Option("--dry-run", help=DRY_RUN_HELP)] = "none",
) -> None:
    """Delete one object."""
    from api.services.commands.objects import delete_object
    from api.services.objects import kind_info

    mode = _dry_run_mode(dry_run)
    info = kind_info(kind)
    ns, name = split_ref(ref)
    assert name is not None
    if mode == "client":
        out.print(f"{info.display(name)} deleted (dry run)")
        return
    try:
        with tracked_write(), database().unit_of_work(dry_run=mode == "server") as uow:
            delete_object(uow, info.kind, ns, name)
            uow.commit()
    except LookupError as exc:
        raise UserError(str(exc).strip("'\"")) from None
    out.print(f"{info.display(name)} deleted" + (" (server dry run)" if mode == "server" else ""))


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


FIELD_SELECTORS = ("metadata.name", "metadata.namespace", "spec.nodeName", "status.phase")


def _selected(row: Any, labels: list[Any], fields: list[Any]) -> bool:
    """kubectl's ``-l`` and ``--field-selector`` on a projection row (``api.k8s.objects``)."""
    from api.k8s.objects import fields_match, labels_match

    meta = row.object.get("metadata") or {}
    view = {
        "metadata": {"name": row.name, "namespace": row.namespace},
        "spec": {**(row.object.get("spec") or {}), "nodeName": (row.status or {}).get("nodeName")},
        "status": {"phase": (row.status or {}).get("phase")},
    }
    return labels_match(meta.get("labels") or {}, labels) and fields_match(view, fields)


def _detail(kind: str, r: Any) -> str:
    if kind == "Pod":
        g = (r.object.get("spec") or {}).get("schedulingGroup") or {}
        return f"group={g.get('podGroupName', '-')} nominated={r.status.get('nominatedNodeName') or '-'}"
    if kind in ("PodGroup", "CompositePodGroup"):
        conds = r.status.get("conditions") or []
        return "; ".join(c.get("message", "") for c in conds)
    return ""


def _table(info: Any, rows: list[Any], output: str, *, namespaces: bool, header: bool = True) -> Table:
    table = Table(show_header=header)
    cols = (["NAMESPACE"] if namespaces else []) + ["NAME", "STATUS"]
    if info.kind == "Pod":
        cols += ["NODE"]
    cols += ["AGE"]
    if output == "wide":
        cols += ["DETAIL"]
    for c in cols:
        table.add_column(c)
    for r in rows:
        status, node = _status_of(info.kind, r)
        cells = ([r.namespace] if namespaces else []) + [r.name, status]
        if info.kind == "Pod":
            cells.append(node)
        cells.append(_age(r.created_at))
        if output == "wide":
            cells.append(_detail(info.kind, r))
        table.add_row(*cells)
    return table


@app.command()
def get(
    kind: str,
    ref: Annotated[str | None, typer.Argument(metavar="[NAME | NAMESPACE/NAME]")] = None,
    output: Annotated[str, typer.Option("-o", "--output", help="wide | json | yaml")] = "",
    namespace: Annotated[
        str | None, typer.Option("-n", "--namespace", help="Namespace (default: default).")
    ] = None,
    all_namespaces: Annotated[
        bool, typer.Option("-A", "--all-namespaces", help="Objects of every namespace.")
    ] = False,
    selector: Annotated[
        str | None,
        typer.Option("-l", "--selector", help="Label selector: app=x,tier!=db,env in (a,b),!spot."),
    ] = None,
    field_selector: Annotated[
        str | None,
        typer.Option("--field-selector", help=f"Field selector on {', '.join(FIELD_SELECTORS)}."),
    ] = None,
    at: Annotated[
        str | None, typer.Option("--at", help="As of a log position or an ISO time (default: now).")
    ] = None,
    watch: Annotated[
        bool, typer.Option("-w", "--watch", help="After listing, print every change (Ctrl-C ends).")
    ] = False,
) -> None:
    """List objects (kubectl-like table) or print them as JSON/YAML."""
    # not api.services (the commands: admission, the unit of work), and for a plain listing not
    # even the connection pool or pydantic: one psycopg connection (start-up stays short)
    from ledger.resources.kinds import UnknownKindError, resolve_kind

    try:
        info = resolve_kind(kind)
    except UnknownKindError as exc:
        raise UserError(str(exc).strip("'\"")) from None
    ref_ns, name = split_ref(ref)
    if ref_ns is not None and namespace is not None and ref_ns != namespace:
        raise UserError(f"{ref}: the namespace {ref_ns!r} contradicts --namespace {namespace!r}")
    if output not in ("", "wide", "json", "yaml"):
        raise UserError(f"unknown output format {output!r} (use wide, json or yaml)")
    if watch and (at is not None or output in ("json", "yaml")):
        raise UserError("--watch prints tables of live changes: not with --at or -o json/yaml")
    ns: str | None = None
    if info.namespaced:
        ns = ref_ns or namespace or (None if all_namespaces and not name else "default")
    elif name:
        ns = ""
    labels: list[Any] = []
    fields: list[Any] = []
    if selector or field_selector:  # api.k8s.objects loads FastAPI: only when filtering
        from api.k8s.objects import parse_field_selector, parse_label_selector
        from api.k8s.status import K8sError

        try:
            labels = parse_label_selector(selector)
            fields = parse_field_selector(field_selector)
        except K8sError as exc:
            raise UserError(exc.args[0] if exc.args else str(exc)) from None
    for path, _, _ in fields:
        if path not in FIELD_SELECTORS:
            raise UserError(f'field label not supported: "{path}" (use {", ".join(FIELD_SELECTORS)})')

    from ledger.queries.object_rows import list_objects

    if at is None and not watch:
        from ledger import db, replica

        if replica.read_database() is not None:  # a standby may answer (PODLEDGER_READ_DATABASE_URL)
            with read_database().connect() as conn:
                rows = list_objects(conn, info.kind, ns, name)
        else:
            with db.read_connection() as conn:
                rows = list_objects(conn, info.kind, ns, name)
        if labels or fields:
            rows = [r for r in rows if _selected(r, labels, fields)]
        _print_rows(info, name, ns, rows, output)
        return
    target = database()

    def fetch() -> list[Any]:
        if at is None:
            with target.connect() as conn:
                rows = list_objects(conn, info.kind, ns, name)
        else:
            from api.services.state import position_at
            from ledger.queries.state import list_objects_at

            pos = position_at(target, at)
            # the temporal projection read directly; a table needs only a few fields of each
            with target.connect() as conn:
                rows = list_objects_at(
                    conn, pos or 0, info.kind, ns, name, lean=output not in ("json", "yaml")
                )
        if not (labels or fields):
            return rows
        return [r for r in rows if _selected(r, labels, fields)]

    rows = fetch()
    namespaces = _print_rows(info, name, ns, rows, output)
    if watch:
        _watch(target, info, fetch, rows, output, namespaces=namespaces)


def _print_rows(info: Any, name: str | None, ns: str | None, rows: list[Any], output: str) -> bool:
    """Print ``rows`` as ``get`` does; returns whether the table has a NAMESPACE column."""
    if name and not rows:
        where = f"{ns}/{name}" if info.namespaced else name
        raise UserError(f'{info.kind} "{where}" not found')
    if output in ("json", "yaml"):
        import orjson

        from ledger.resources.manifest import to_manifest

        items = [to_manifest(r.full()) for r in rows]  # quantities as kubectl writes them
        doc: Any = items[0] if name else {"apiVersion": "v1", "kind": "List", "items": items}
        if output == "json":
            sys.stdout.write(
                orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode() + "\n"
            )
        else:
            import yaml

            sys.stdout.write(yaml.safe_dump(doc, sort_keys=False))
        return False
    namespaces = bool(info.namespaced and ns is None)
    if rows:
        out.print(_table(info, rows, output, namespaces=namespaces))
    elif ns:
        err.print(f"No resources found in {ns} namespace.")
    else:
        err.print(f"No {info.plural} found.")
    return namespaces


def _watch(
    target: Database, info: Any, fetch: Any, rows: list[Any], output: str, *, namespaces: bool
) -> None:
    """Print each object again when it changes (LISTEN/NOTIFY wakes us; positions decide)."""
    from api.cli.admin import follow

    seen = {(r.namespace, r.name): r.updated_position for r in rows}

    def changed(_head: int) -> None:
        fresh = [r for r in fetch() if seen.get((r.namespace, r.name)) != r.updated_position]
        for r in fresh:
            seen[(r.namespace, r.name)] = r.updated_position
        if fresh:
            out.print(_table(info, fresh, output, namespaces=namespaces, header=False))

    follow(target, changed)
