"""The ``podledger`` command line (Typer + Rich).

Exit codes: 0 success, 1 user error (bad input, failed expectation, conflict), 2 usage.
"""

from __future__ import annotations

import sys
from typing import Annotated

import orjson
import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="podledger: an event-sourced scheduling ledger.",
)
db_app = typer.Typer(no_args_is_help=True, help="Database schema.")
proj_app = typer.Typer(no_args_is_help=True, help="Projections.")
app.add_typer(db_app, name="db")
app.add_typer(proj_app, name="projections")

_WIDTH = None if sys.stdout.isatty() else 180  # Rich falls back to 80 columns when piped
# markup=False: messages quote user input (names, kinds, field values) verbatim; Rich markup in
# them must neither crash nor vanish.
out = Console(highlight=False, soft_wrap=True, width=_WIDTH, markup=False)
err = Console(stderr=True, highlight=False, soft_wrap=True, width=_WIDTH, markup=False)


class UserError(Exception):
    """A problem with the user's input: printed without a traceback, exit code 1."""


def _engine():  # type: ignore[no-untyped-def]
    from ledger import db

    return db.get_engine()


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Migrate the database to the newest schema (also done automatically on start)."""
    from ledger import db

    url = db.server_url()
    db.ensure_database(url)
    db.migrate(url)
    out.print(f"database {db.database_name(url)} is at the newest schema")


@app.command()
def verify(
    checkpoint: Annotated[
        str | None, typer.Option(help="Also prove the log extends this signed checkpoint file.")
    ] = None,
    public_key: Annotated[
        str | None, typer.Option(help="Verifier key (text or file) for --checkpoint.")
    ] = None,
    key: Annotated[
        str | None, typer.Option(help="Signing key file whose public half checks --checkpoint.")
    ] = None,
) -> None:
    """Walk the hash chain of the log and name the first broken position."""
    from ledger.verify import verify_chain

    if checkpoint is not None:  # api/cli_anchor.py: recomputes the chain and the Merkle tree
        from pathlib import Path

        from api.cli_anchor import verify_checkpoint

        return verify_checkpoint(Path(checkpoint), public_key, key)

    res = verify_chain(_engine(), progress=lambda n: err.print(f"  checked {n} events…"))
    if res.ok:
        out.print(f"ok: {res.checked} events, hash chain intact")
        return
    out.print(
        f"BROKEN at position {res.first_bad_position}: {res.reason} ({res.checked} events verified before it)"
    )
    raise typer.Exit(1)


@proj_app.command("rebuild")
def projections_rebuild() -> None:
    """Re-fold every projection from position 0."""
    from ledger.projections.runner import ASYNC_PROJECTIONS, rebuild_async, rebuild_current

    engine = _engine()
    n = rebuild_current(engine)
    out.print(f"objects: re-folded {n} events")
    for name, proj in ASYNC_PROJECTIONS.items():
        m = rebuild_async(engine, proj)
        out.print(f"{name}: re-folded {m} events")


@app.command("log")
def log_cmd(
    after: Annotated[int, typer.Option(help="Show events after this position.")] = 0,
    limit: Annotated[int, typer.Option(help="At most this many events.")] = 50,
    output: Annotated[str, typer.Option("-o", "--output", help="table | json")] = "table",
) -> None:
    """Print events of the log by position."""
    from ledger import store

    events = store.read_all(_engine(), after=after, limit=limit)
    if output == "json":
        for ev in events:
            sys.stdout.write(
                orjson.dumps(
                    {
                        "position": ev.position,
                        "stream": ev.stream,
                        "version": ev.version,
                        "type": ev.type,
                        "data": ev.data,
                        "meta": ev.meta,
                        "effective_at": ev.effective_at.isoformat(),
                    }
                ).decode()
                + "\n"
            )
        return
    table = Table("POS", "STREAM", "VER", "TYPE", "DATA", box=None)
    for ev in events:
        data = orjson.dumps(ev.data).decode()
        table.add_row(
            str(ev.position), ev.stream, str(ev.version), ev.type, data[:80] + ("…" if len(data) > 80 else "")
        )
    out.print(table)


def main() -> None:
    import api.cli_anchor  # noqa: F401  (registers checkpoint/prove/db roles)
    import api.cli_audit  # noqa: F401  (registers explain/history/replay)
    import api.cli_objects  # noqa: F401  (registers apply/get/delete)
    import api.cli_sched  # noqa: F401  (registers schedule/simulate/demo)
    import api.cli_serve  # noqa: F401  (registers serve)
    from ledger.errors import LedgerError

    try:
        app()
    except (UserError, LedgerError) as exc:
        err.print(f"error: {exc}")
        sys.exit(1)


if __name__ == "__main__":
    main()


__all__ = ["app", "main", "out", "err", "UserError"]
