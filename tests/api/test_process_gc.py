"""The garbage collector is tuned once, by the program that owns the process (api/process.py),
never inside library calls: a batch append or a replay leaves the collector as it found it."""

from __future__ import annotations

import gc
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from api.process import YOUNG_GC_THRESHOLD, tune_gc
from ledger.database import Database
from ledger.store import NewEvent
from tests.ledger_helpers import append_events

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def default_gc() -> Iterator[tuple[int, int, int]]:
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield gc.get_threshold()
    gc.set_threshold(*saved)


def test_tune_gc_raises_the_young_threshold_and_never_lowers_it(default_gc: tuple[int, int, int]) -> None:
    tune_gc()
    assert gc.get_threshold() == (YOUNG_GC_THRESHOLD, 10, 10)
    gc.set_threshold(50_000, 10, 10)
    tune_gc()
    assert gc.get_threshold() == (50_000, 10, 10)


def test_the_cli_entry_point_tunes_the_collector() -> None:
    code = (
        "import gc, sys\n"
        "sys.argv = ['podledger', '--help']\n"
        "from api.cli.main import main\n"
        "before = gc.get_threshold()[0]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('GC', before, gc.get_threshold()[0])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    before, after = out.rsplit("GC ", 1)[1].split()
    assert int(before) < YOUNG_GC_THRESHOLD == int(after)


def test_library_calls_leave_the_collector_alone(
    database: Database, default_gc: tuple[int, int, int]
) -> None:
    from api.services.replay import verify_replay

    events = [NewEvent("note/gc", "NoteRecorded", {"text": str(i)}) for i in range(300)]  # a COPY-sized batch
    append_events(database, events)
    assert gc.isenabled() and gc.get_threshold() == default_gc
    verify_replay(database)
    assert gc.isenabled() and gc.get_threshold() == default_gc
