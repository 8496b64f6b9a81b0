"""What the windowed analytics (issue 34, ledger/projections/analytics.py) cost the inline
projection (``python -m bench.analytics_cost [--events N]``).

The append of ``bench.append`` (batched append vs raw COPY) does not run the projection, so its
ratio cannot move; the projection runs in the same transaction as every application write, and
this measures it: the real write path's log of ``bench.audit`` (inputs, scheduling decisions,
retries, deletions) is re-folded from position 0 in batches of 1,000 events, with the analytics
on and off, alternating, each in a transaction rolled back afterwards. Reported: events/s of both
and their ratio (the share of the projection's time the analytics take).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from bench.append import drop_database, fresh_database
from bench.audit import build
from bench.common import Metric, print_table, write
from ledger import db
from ledger.projections.runner import refold_current


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.analytics_cost", description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=30_000)
    ap.add_argument("--rounds", type=int, default=3, help="re-folds of each kind")
    ap.add_argument("--reuse", metavar="URL", help="a database kept by bench.audit --keep")
    args = ap.parse_args(argv)
    url = args.reuse or fresh_database()
    try:
        if args.reuse:
            db.server_url()
        database = db.get_database(url, migrate_on_start=False)
        if not args.reuse:
            import bench.audit as audit

            audit.BIG_PODS = 2_000
            print(f"building a log of >= {args.events:,} events ...", file=sys.stderr, flush=True)
            build(database, args.events)
        on: list[float] = []
        off: list[float] = []
        n = 0
        for r in range(args.rounds):
            for flag, out in ((True, on), (False, off)) if r % 2 == 0 else ((False, off), (True, on)):
                with database.transaction() as conn:
                    t0 = time.perf_counter()
                    n = refold_current(conn, 1000, analytics=flag)
                    out.append(time.perf_counter() - t0)
                    conn.rollback()
                print(f"  round {r}: analytics {'on' if flag else 'off'} {out[-1]:.2f} s", file=sys.stderr)
    finally:
        if not args.reuse:
            drop_database(url)
    t_on, t_off = statistics.median(on), statistics.median(off)
    metrics = [
        Metric(
            "inline projection with the analytics (1,000-event batches, real write path's log)",
            n / t_on,
            "events/s",
            "the same fold without them, same run",
            n / t_off,
            (n / t_on) / (n / t_off),
            f"(reported) {n:,} events; analytics add {100 * (t_on / t_off - 1):.0f} % to the projection",
            True,
        )
    ]
    print_table("analytics cost (bench/results/analytics_cost.json)", metrics)
    write("analytics_cost", metrics)


if __name__ == "__main__":
    main()
