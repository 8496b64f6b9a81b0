"""Process-wide settings, made once by each entry point (the CLI, every benchmark's ``main``).

Library code never changes process-wide state; the programs that own the process do, here.

Garbage collection: podledger's hot paths (appending batches, folding and replaying the log,
scheduling) allocate millions of short-lived, acyclic objects (rows, payloads, pods) that
reference counting frees. With CPython's default young-generation threshold (700 allocations)
the cyclic collector runs thousands of times over them while a large heap is alive: measured
15-20 % of the CPU time of ``replay --verify`` and ~5 us per event of a COPY-sized append.
Collecting the young generation every 20,000 allocations instead keeps cycles collected (the
older generations keep their thresholds) at a fraction of that cost.
"""

from __future__ import annotations

import gc

YOUNG_GC_THRESHOLD = 20_000


def tune_gc(young: int = YOUNG_GC_THRESHOLD) -> None:
    """Collect the young generation every ``young`` allocations (never lowers a higher one)."""
    t0, t1, t2 = gc.get_threshold()
    if t0 < young:
        gc.set_threshold(young, t1, t2)
