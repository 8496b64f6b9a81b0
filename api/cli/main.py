"""``podledger``: registers every command group on the app and runs it.

Whatever goes wrong, the CLI prints one ``error: ...`` line and exits 1, never a Python
traceback (set ``PODLEDGER_DEBUG=1`` to see one): user errors, ledger and service errors,
input that is not UTF-8 or is nested too deeply, and a database that cannot be reached.
"""

from __future__ import annotations

import copy
import os
import sys

import typer

import api.attach.cli  # noqa: F401  (registers attach)
import api.cli.admin  # noqa: F401  (registers db upgrade, verify, projections rebuild, log)
import api.cli.anchor  # noqa: F401  (registers checkpoint, prove, db roles)
import api.cli.audit  # noqa: F401  (registers explain, history, replay)
import api.cli.export  # noqa: F401  (registers export)
import api.cli.objects  # noqa: F401  (registers apply, get, delete)
import api.cli.partitions  # noqa: F401  (registers db partitions)
import api.cli.predictions  # noqa: F401  (registers predictions refresh)
import api.cli.scheduling  # noqa: F401  (registers schedule, simulate, demo, worker)
import api.cli.serve  # noqa: F401  (registers serve)
import api.k8s.cli  # noqa: F401  (registers kubeconfig)
from api.cli.console import UserError, app, err, one_line_error
from api.process import tune_gc
from api.services.errors import ServiceError
from ledger.errors import LedgerError


def _stub() -> None:
    """Stands in for the commands not invoked (never called: ``app_for`` keeps the one named)."""


def app_for(argv: list[str]) -> typer.Typer:
    """``app`` as Typer needs it to run the command or group that ``argv`` (without the program)
    names: Typer builds every registered command's parameters before it parses (~10 ms), so the
    others stand in as parameterless stubs of the same names (the app stays a group and
    suggestions for a mistyped subcommand are unchanged). ``app`` itself for anything else (no
    command, an option first, a name that is not a command, shell completion)."""
    if not argv or argv[0].startswith("-") or any(k.endswith("_COMPLETE") for k in os.environ):
        return app
    from typer.main import get_command_name
    from typer.models import CommandInfo, TyperInfo

    def name(c: CommandInfo) -> str:
        return c.name or get_command_name(c.callback.__name__)  # type: ignore[union-attr]

    commands = [c for c in app.registered_commands if name(c) == argv[0]]
    groups = [g for g in app.registered_groups if g.name == argv[0]]
    if len(commands) + len(groups) != 1:
        return app
    one = copy.copy(app)
    one.registered_commands = [
        c if name(c) == argv[0] else CommandInfo(name=name(c), callback=_stub)
        for c in app.registered_commands
    ]
    one.registered_groups = [
        g if g.name == argv[0] else TyperInfo(typer.Typer(), name=g.name) for g in app.registered_groups
    ]
    return one


def main() -> None:
    tune_gc()
    try:
        app_for(sys.argv[1:])()
    except (UserError, LedgerError, ServiceError) as exc:
        err.error(str(exc))
        sys.exit(1)
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:  # one clear line instead of a traceback
        if os.environ.get("PODLEDGER_DEBUG"):
            raise
        err.error(one_line_error(exc))
        sys.exit(1)


if __name__ == "__main__":
    main()


__all__ = ["app", "app_for", "main"]
