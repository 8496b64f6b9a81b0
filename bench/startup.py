"""Start-up of the CLI: ``podledger --help`` and ``podledger get pods -A`` against a running
server, each as the best of N runs and as a ratio against a bare ``python -c pass`` of the same
interpreter (the machine's own floor). Goals: --help <= 0.25 s, get pods <= 0.4 s.

Wall time is what a user waits, but on a shared, loaded machine it mostly measures the wait for a
core; the CPU time (user + system) of the same runs is reported too ("cpu" rows), with the same
floor, since load does not inflate it."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from bench.common import Metric, print_table, write

ROOT = Path(__file__).resolve().parent.parent
PODLEDGER = str(Path(sys.executable).parent / "podledger")
RUNS = 7


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def best_of(cmd: list[str], env: dict[str, str], runs: int = RUNS) -> tuple[float, float]:
    """(best wall time, best CPU time) of ``runs`` runs of ``cmd``."""
    times, cpu = [], []
    for _ in range(runs):
        c0 = _children_cpu()
        t0 = time.perf_counter()
        res = subprocess.run(cmd, capture_output=True, cwd=ROOT, env=env)
        times.append(time.perf_counter() - t0)
        cpu.append(_children_cpu() - c0)
        if res.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed: {res.stderr.decode()[-500:]}")
    return min(times), min(cpu)


def run() -> list[Metric]:
    from ledger import db

    # this process holds the server (embedded unless PODLEDGER_DATABASE_URL): the commands
    # measured below connect to a running, migrated database, as a user's do
    url = os.environ.get("PODLEDGER_DATABASE_URL") or db.server_url()
    db.get_engine(url, owner=True)
    env = dict(os.environ, PODLEDGER_DATABASE_URL=url)
    floor, floor_cpu = best_of([sys.executable, "-c", "pass"], env)
    out = []
    for name, cmd, goal in (
        ("podledger --help", [PODLEDGER, "--help"], 0.25),
        ("podledger get pods -A", [PODLEDGER, "get", "pods", "-A"], 0.4),
    ):
        value, cpu = best_of(cmd, env)
        out.append(
            Metric(name, value, "s", "python -c pass", floor, value / floor, f"<= {goal:g} s", value <= goal)
        )
        out.append(
            Metric(
                f"{name} (cpu)",
                cpu,
                "s",
                "python -c pass (cpu)",
                floor_cpu,
                cpu / floor_cpu if floor_cpu else None,
                f"<= {goal:g} s",
                cpu <= goal,
            )
        )
    return out


def main() -> None:
    metrics = run()
    print_table("CLI start-up (bench/results/startup.json)", metrics)
    write("startup", metrics)


if __name__ == "__main__":
    main()
