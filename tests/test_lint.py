"""The tree stays ruff-clean, ruff-formatted and mypy-strict on ledger/, scheduler/ and api/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def run(*args: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / args[0]), *args[1:]], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


def test_ruff_clean() -> None:
    res = run("ruff", "check", ".")
    assert res.returncode == 0, res.stdout + res.stderr


def test_ruff_formatted() -> None:
    res = run("ruff", "format", "--check", ".")
    assert res.returncode == 0, res.stdout + res.stderr


def test_mypy_strict_on_every_package() -> None:
    res = run("mypy", "ledger", "scheduler", "api", timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
