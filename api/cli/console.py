"""The Typer app every command registers on, the output consoles, and user errors.

Exit codes: 0 success, 1 user error (bad input, failed expectation, conflict), 2 usage.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

import typer

from api.cli import light_params

if TYPE_CHECKING:
    from rich.console import Console

    from ledger.database import Database

light_params.install()  # str parameters without pydantic (Typer's own path if its internals moved)

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

_WIDTH = None if sys.stdout.isatty() else 180  # Rich falls back to 80 columns when piped


class LazyConsole:
    """``print`` as Rich's Console prints, without importing Rich when the output is not a
    terminal and ``api.cli.plain`` can lay the text or table out itself (the same characters);
    ``.rich`` is the Rich Console, created on first need (a terminal, progress bars, anything
    ``plain`` declines)."""

    def __init__(self, *, stderr: bool = False) -> None:
        self.stderr = stderr
        self._rich: Console | None = None

    @property
    def rich(self) -> Console:
        if self._rich is None:
            from rich.console import Console

            # markup=False: messages quote user input (names, kinds, field values) verbatim;
            # Rich markup in them must neither crash nor vanish.
            self._rich = Console(
                stderr=self.stderr, highlight=False, soft_wrap=True, width=_WIDTH, markup=False
            )
        return self._rich

    def _plain_stream(self) -> Any:
        """The stream to write plain text to, or None when Rich must print (a terminal, or
        the environment asks Rich to treat the stream as one)."""
        if _WIDTH is None or os.environ.get("TTY_COMPATIBLE") or os.environ.get("FORCE_COLOR") is not None:
            return None
        stream = sys.stderr if self.stderr else sys.stdout
        stream = getattr(stream, "rich_proxied_file", stream)
        try:
            if stream is None or stream.isatty():
                return None
        except (AttributeError, ValueError):
            return None
        return stream

    def print(self, obj: Any = "", *, markup: bool | None = None) -> None:
        from api.cli import plain

        stream = self._plain_stream() if markup in (None, False) else None
        if stream is not None:
            text = None
            if isinstance(obj, str):
                text = plain.render_text(obj)
            elif isinstance(obj, plain.Table):
                text = obj.render(_WIDTH or 80)
            if text is not None:
                stream.write(text)
                stream.flush()
                return
        if isinstance(obj, plain.Table):
            obj = obj.to_rich()
        self.rich.print(obj, markup=markup)

    def __getattr__(self, name: str) -> Any:  # anything else: the Rich Console's
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.rich, name)


out = LazyConsole()
err = LazyConsole(stderr=True)


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


def split_ref(ref: str | None) -> tuple[str | None, str | None]:
    """``NAMESPACE/NAME`` → (namespace, name); ``NAME`` → (None, name)."""
    if not ref:
        return None, None
    if "/" in ref:
        ns, name = ref.split("/", 1)
        return ns, name
    return None, ref


__all__ = ["UserError", "app", "database", "db_app", "err", "one_line_error", "out", "proj_app", "split_ref"]
