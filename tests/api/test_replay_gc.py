"""replay --verify relaxes the young-generation GC threshold while it runs and restores it after,
also when verifications overlap or fail."""

from __future__ import annotations

import gc

import pytest

from api.services.replay import _young_gc_relaxed


def test_threshold_raised_inside_and_restored_after() -> None:
    before = gc.get_threshold()
    with _young_gc_relaxed(50_000):
        assert gc.get_threshold() == (max(before[0], 50_000), *before[1:])
        with _young_gc_relaxed(50_000):  # an overlapping verify
            assert gc.get_threshold()[0] == max(before[0], 50_000)
        assert gc.get_threshold()[0] == max(before[0], 50_000)  # the first still runs
    assert gc.get_threshold() == before


def test_threshold_restored_when_the_block_fails() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), _young_gc_relaxed():
        raise RuntimeError("boom")
    assert gc.get_threshold() == before
