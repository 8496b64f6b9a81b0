"""``api.cli.light_params``: the light coercion agrees with Typer's own, switches itself off when
Typer's internals change, and keeps pydantic (and the other heavy modules) out of a CLI start."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import typer.core
from typer import _coercion
from typer.models import ArgumentInfo, OptionInfo

from api.cli import light_params

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("pydantic", "rich", "yaml", "sqlalchemy", "alembic", "numpy", "fastapi", "starlette", "scheduler")


@pytest.fixture()
def light():
    assert light_params.install()  # api.cli.console installed it already: idempotent
    assert typer.core.build_runtime_param is not _coercion.build_runtime_param
    return typer.core.build_runtime_param


def _descriptor(annotation, info=None):
    return _coercion.resolve_type_descriptor(annotation, info or OptionInfo())


def _outcome(runtime, value, *, multiple=False):
    param = SimpleNamespace(multiple=multiple, nargs=1, name="x", human_readable_name="X")
    try:
        return ("ok", runtime.coerce(value, param=param, ctx=None))
    except Exception as exc:  # noqa: BLE001 - the error type is what is compared
        return ("error", type(exc).__name__)


STRINGS = ["", "pods", " spaced ", "team-a/x", "é…日本", "a\udc80b", "\x00", "12", "true", "None"]


@pytest.mark.parametrize(
    ("annotation", "values", "multiple"),
    [
        (str, [*STRINGS, None, b"bytes", 5, 1.5, True], False),
        (bool, [True, False, None, "true", "no", "", "maybe", 1], False),
        (list[str], [(), ("a", "b"), ["x"], ("a", b"b"), ("a", 3), None, "ab"], True),
    ],
)
def test_light_coercion_agrees_with_typer(light, annotation, values, multiple):
    desc = _descriptor(annotation)
    assert light_params.light_kind(desc) is not None
    ours, theirs = light(desc), _coercion.build_runtime_param(desc)
    assert type(ours).__name__ == "LightRuntimeParam"
    for value in values:
        assert _outcome(ours, value, multiple=multiple) == _outcome(theirs, value, multiple=multiple), value


def test_other_parameters_keep_typers_coercion(light):
    for desc in (
        _descriptor(int),
        _descriptor(Path),
        _descriptor(str, OptionInfo(parser=str.upper)),
        _descriptor(list[int]),
        _descriptor(str, ArgumentInfo(parser=str.strip)),
    ):
        assert light_params.light_kind(desc) is None
        assert type(light(desc)).__name__ != "LightRuntimeParam"


def test_switches_itself_off_when_typer_changes(monkeypatch):
    light_params.uninstall()
    try:
        assert light_params._typer_shape_ok()

        @dataclasses.dataclass(frozen=True)
        class Reshaped:
            parameter_info: object
            annotation: object
            converter: object

        monkeypatch.setattr(_coercion, "RuntimeParam", Reshaped)
        assert not light_params.install()
        assert typer.core.build_runtime_param is _coercion.build_runtime_param
        monkeypatch.undo()

        monkeypatch.setattr(typer.core, "build_runtime_param", lambda d: None)  # moved elsewhere
        assert not light_params.install()
        monkeypatch.undo()

        monkeypatch.delattr(_coercion, "TypeDescriptor")
        assert not light_params.install()
        monkeypatch.undo()
    finally:
        assert light_params.install()


def _modules_after(args: list[str], env: dict[str, str]) -> tuple[int, list[str]]:
    code = (
        "import json, sys\n"
        f"sys.argv = ['podledger', *{args!r}]\n"
        "from api.cli.main import main\n"
        "rc = 0\n"
        "try:\n    main()\nexcept SystemExit as e:\n    rc = e.code or 0\n"
        f"heavy = sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})\n"
        "sys.stderr.write('MODULES ' + json.dumps([rc, heavy]) + '\\n')\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120
    )
    line = [ln for ln in res.stderr.splitlines() if ln.startswith("MODULES ")]
    assert line, res.stderr
    rc, heavy = json.loads(line[-1][len("MODULES ") :])
    return rc, heavy


def test_help_and_a_user_error_load_nothing_heavy():
    assert _modules_after(["--help"], dict(os.environ)) == (0, [])
    assert _modules_after(["get", "nosuchkind", "-n", "x"], dict(os.environ)) == (1, [])


def test_get_pods_loads_nothing_heavy(database):
    env = dict(os.environ)  # PODLEDGER_DATABASE_URL: the test's database
    assert _modules_after(["get", "pods", "-A"], env) == (0, [])
    assert _modules_after(["get", "pods", "-n", "team-a", "-o", "wide"], env) == (0, [])
