"""``make bench``: run every benchmark module in bench/, each in its own process (so one
module's memory never shows in another's peak RSS), and print one table per module."""

from __future__ import annotations

import subprocess
import sys
import time

MODULES = [
    "bench.append",
    "bench.audit",
    "bench.core",
    "bench.endtoend",
    "bench.partitions",
    "bench.preemption",
    "bench.scale",
    "bench.startup",
    "bench.trace",
]


def main() -> None:
    failed = []
    for name in MODULES:
        t0 = time.perf_counter()
        print(f"== {name} ==", flush=True)
        if subprocess.run([sys.executable, "-m", name]).returncode != 0:  # report and go on
            failed.append(name)
            print(f"{name} failed", file=sys.stderr)
        print(f"({name}: {time.perf_counter() - t0:.1f} s)\n", flush=True)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    from api.process import tune_gc

    tune_gc()
    main()
