"""``podledger db partitions list | ensure | detach``: the partitions of the log (docs/operations.md)."""

from __future__ import annotations

import sys
from dataclasses import asdict
from typing import TYPE_CHECKING, Annotated

import typer

from api.cli.console import UserError, db_app, out
from api.cli.printer import Table

if TYPE_CHECKING:
    from ledger.database import Database

partitions_app = typer.Typer(no_args_is_help=True, help="Partitions of the events table (by position range).")
db_app.add_typer(partitions_app, name="partitions")


def _owner_db() -> Database:
    from ledger import db

    return db.get_database(owner=True)


def _size(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def _pos(v: int | None) -> str:
    return "-" if v is None else str(v)


@partitions_app.command("list")
def partitions_list(
    output: Annotated[str, typer.Option("-o", "--output", help="table | json")] = "table",
) -> None:
    """Attached, default and detached partitions with their position ranges and sizes."""
    import orjson

    from ledger import partitions

    parts = partitions.list_partitions(_owner_db())
    if output == "json":
        sys.stdout.write(orjson.dumps([asdict(p) for p in parts]).decode() + "\n")
        return
    table = Table("PARTITION", "STATE", "FROM", "TO", "FIRST", "LAST", "SIZE")
    for p in parts:
        table.add_row(
            p.name,
            p.state,
            _pos(p.lo),
            _pos(p.hi),
            _pos(p.first),
            _pos(p.last),
            _size(p.bytes) if p.bytes else "-",
        )
    out.print(table)


@partitions_app.command("ensure")
def partitions_ensure(
    ahead: Annotated[
        int | None, typer.Option(help="Empty partitions to keep after the newest position (default 2).")
    ] = None,
    size: Annotated[
        int | None,
        typer.Option(
            help="Positions per new partition (default $PODLEDGER_PARTITION_SIZE, else the newest one's)."
        ),
    ] = None,
) -> None:
    """Create the partitions ahead of the log (and fold rows of the default partition)."""
    from ledger import partitions

    if size is not None and size < 1:
        raise UserError("--size must be at least 1")
    if ahead is not None and ahead < 0:
        raise UserError("--ahead must not be negative")
    made = partitions.ensure(_owner_db(), ahead, size)
    out.print(
        f"created {len(made)} partitions: {', '.join(made)}" if made else "ok: partitions already in place"
    )


@partitions_app.command("detach")
def partitions_detach(
    before: Annotated[
        int, typer.Option("--before", help="Detach the partitions wholly before this position.")
    ],
    archive: Annotated[
        bool,
        typer.Option("--archive", help="Keep the detached partitions as tables of the schema event_archive."),
    ] = False,
    drop: Annotated[
        bool, typer.Option("--drop", help="Drop the detached partitions (their events leave the database).")
    ] = False,
) -> None:
    """Detach the oldest partitions (the retained log stays verifiable from its first event)."""
    from ledger import partitions

    if archive == drop:
        raise UserError(
            "say --archive (keep the partitions in the schema event_archive) or --drop (discard their events)"
        )
    import psycopg

    try:
        done = partitions.detach(_owner_db(), before, archive=archive)
    except psycopg.Error as exc:
        # 55000: the Merkle tree does not cover the events yet; 55P03: the table lock timed out
        if exc.sqlstate in ("55000", "55P03"):
            raise UserError(str(exc).strip().splitlines()[0]) from None
        raise
    if not done:
        out.print(f"nothing to detach: no partition lies wholly before position {before} and the log's head")
        return
    where = "moved to event_archive" if archive else "dropped"
    for d in done:
        out.print(f"{d.name}: positions [{d.lo}, {d.hi}), {d.events} events, {where}")
