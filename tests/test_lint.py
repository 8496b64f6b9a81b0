"""The tree stays ruff-clean and mypy-strict on ledger/ and scheduler/ (issue: foundation)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def test_ruff_clean() -> None:
    res = subprocess.run(
        [str(BIN / "ruff"), "check", "."], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stdout + res.stderr


def test_mypy_strict_on_ledger_and_scheduler() -> None:
    res = subprocess.run(
        [str(BIN / "mypy"), "ledger", "scheduler"], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert res.returncode == 0, res.stdout + res.stderr
