"""``api.cli.main.app_for``: running one command through the pruned app prints and exits exactly
as through the whole app (help, usage errors, a mistyped subcommand)."""

from __future__ import annotations

import pytest
from typer.main import get_command_name
from typer.testing import CliRunner

from api.cli.main import app, app_for

NAMES = sorted(
    [c.name or get_command_name(c.callback.__name__) for c in app.registered_commands]
    + [g.name for g in app.registered_groups]
)
ARGS = [
    ["--help"],
    [],
    ["--no-such-option"],
    ["nosuch"],
    ["x", "y", "z", "w"],
]


def _run(target, argv):
    res = CliRunner().invoke(
        target, argv, catch_exceptions=False, env={"PODLEDGER_DATABASE_URL": "postgresql:///x"}
    )
    return res.exit_code, res.output


GROUPS = ("db", "projections", "predictions")  # command groups: with no subcommand they print help


@pytest.mark.parametrize("name", NAMES)
def test_one_command_prints_as_in_the_whole_app(name):
    for extra in ARGS:
        argv = [name, *extra]
        if extra and extra[0] not in ("--help", "--no-such-option") and name not in GROUPS:
            continue  # would run the command (needs a database): covered by the CLI tests
        if not extra and name not in (*GROUPS, "get", "delete", "explain", "history", "apply"):
            continue  # these run with no arguments
        pruned = app_for(argv)
        assert pruned is not app
        assert _run(pruned, argv) == _run(app, argv), argv


def test_whole_app_when_no_command_is_named(monkeypatch):
    assert app_for([]) is app
    assert app_for(["--help"]) is app
    assert app_for(["nosuch", "x"]) is app
    assert app_for(["log-cmd"]) is app  # the function's name, not the command's
    monkeypatch.setenv("_PODLEDGER_COMPLETE", "bash_complete")
    assert app_for(["get", "pods"]) is app
