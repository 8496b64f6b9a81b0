"""``make bench``: run every benchmark module in bench/ and print one table per module."""

from __future__ import annotations

import importlib
import sys
import time

MODULES = ["bench.append", "bench.core", "bench.endtoend", "bench.preemption", "bench.scale", "bench.trace"]


def main() -> None:
    failed = []
    for name in MODULES:
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                print(f"({name}: not present, skipped)")
                continue
            raise
        t0 = time.perf_counter()
        print(f"== {name} ==", flush=True)
        try:
            mod.main()
        except Exception as exc:  # report and go on with the other benchmarks
            failed.append(name)
            print(f"{name} failed: {exc!r}", file=sys.stderr)
        print(f"({name}: {time.perf_counter() - t0:.1f} s)\n", flush=True)
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
