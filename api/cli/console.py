"""The Typer app every command registers on, the printers (``out``, ``err``: ``api.cli.printer``)
and user errors.

Exit codes: 0 success, 1 user error (bad input, failed expectation, conflict), 2 usage.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import typer

from api.cli.printer import err, out

if TYPE_CHECKING:
    from ledger.database import Database

app = typer.Typer(
    add_completion=True,  # --install-completion / --show-completion (bash, zsh, fish, PowerShell)
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help: Rich's help renderer costs ~0.1 s of every start
    help="podledger: an event-sourced scheduling ledger.",
)
db_app = typer.Typer(no_args_is_help=True, help="Database schema.")
proj_app = typer.Typer(no_args_is_help=True, help="Projections.")
app.add_typer(db_app, name="db")
app.add_typer(proj_app, name="projections")


class UserError(Exception):
    """A problem with the user's input: printed without a traceback, exit code 1."""


def one_line_error(exc: BaseException) -> str:
    """A one-line message for an unexpected exception (the CLI prints it instead of a traceback)."""
    from api.http.errors import database_down

    if isinstance(exc, UnicodeDecodeError):
        return f"the input is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})"
    if isinstance(exc, UnicodeEncodeError) and "\udc80" <= exc.object[exc.start] <= "\udcff":
        # stdin read with surrogateescape (a C locale): an undecodable byte surfaced later
        return f"the input is not UTF-8 text (byte 0x{ord(exc.object[exc.start]) - 0xDC00:02x})"
    if isinstance(exc, RecursionError):
        return "the input is nested too deeply"
    if database_down(exc):
        first = (str(exc).strip().splitlines() or [""])[0]
        return f"cannot reach the database: {first or type(exc).__name__}"
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first} (set PODLEDGER_DEBUG=1 for a traceback)"


def database() -> Database:
    """The configured ledger (PODLEDGER_DATABASE_URL or the embedded server)."""
    from ledger import db

    return db.get_database()


def read_database() -> Database:
    """The database a read command uses: with ``PODLEDGER_READ_DATABASE_URL`` set, a standby
    that has replayed ``PODLEDGER_MIN_LSN`` (a write's commit position) within
    ``PODLEDGER_READ_WAIT`` seconds, else the primary (``ledger.replica.route``); which one
    answered as of which WAL position goes to stderr. Without it, the configured ledger."""
    import os

    from ledger import replica

    primary = database()
    if replica.read_database() is None:
        return primary
    with replica.tracking(os.environ.get("PODLEDGER_MIN_LSN") or None) as pos:
        chosen = replica.route(primary)
    err.print(f"(served by the {pos.served_by} as of WAL position {pos.read_lsn})")
    return chosen


@contextmanager
def tracked_write() -> Iterator[None]:
    """With ``PODLEDGER_READ_DATABASE_URL`` set, the writes of the block print on stderr the WAL
    position they committed at (give it to later reads as ``PODLEDGER_MIN_LSN``)."""
    from ledger import replica

    if replica.read_database() is None:
        yield
        return
    with replica.tracking() as pos:
        yield
    if pos.commit_lsn:
        err.print(f"(committed at WAL position {pos.commit_lsn}; reads wait for it with PODLEDGER_MIN_LSN)")


def split_ref(ref: str | None) -> tuple[str | None, str | None]:
    """``NAMESPACE/NAME`` → (namespace, name); ``NAME`` → (None, name)."""
    if not ref:
        return None, None
    if "/" in ref:
        ns, name = ref.split("/", 1)
        return ns, name
    return None, ref


__all__ = [
    "UserError",
    "app",
    "database",
    "db_app",
    "read_database",
    "tracked_write",
    "err",
    "one_line_error",
    "out",
    "proj_app",
    "split_ref",
]
