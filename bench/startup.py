"""Start-up of the CLI: ``podledger --help`` and ``podledger get pods -A`` against a running
server, each as the best of N runs and as a ratio against a bare ``python -c pass`` of the same
interpreter (the machine's own floor). Goals: --help <= 0.25 s, get pods <= 0.4 s.

The project's modules are byte-compiled first, as an installed copy's are (pip compiles what it
installs; an editable checkout's modules are compiled on first import, unless
PYTHONDONTWRITEBYTECODE is set, as in this machine's environment: then every start would
compile ~25 modules from source, ~15 ms that no user pays).

``BENCH_STARTUP_BASELINE=DIR`` also measures the checkout in DIR (e.g. ``git archive main``
unpacked there), run as ``python -m api.cli`` in the same run, for a before/after comparison
on a busy machine. The commands are run in turn, one run of each per round with the order
rotated every round, so that a change of load reaches the before and the after alike.

Wall time is what a user waits, but on a shared, loaded machine it mostly measures the wait for a
core; the CPU time (user + system) of the same runs is reported too ("cpu" rows), with the same
floor, since load does not inflate it."""

from __future__ import annotations

import compileall
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from bench.common import Metric, print_table, write

ROOT = Path(__file__).resolve().parent.parent
PODLEDGER = str(Path(sys.executable).parent / "podledger")
RUNS = int(os.environ.get("BENCH_STARTUP_RUNS", "7"))


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def one_run(cmd: list[str], env: dict[str, str], cwd: Path = ROOT) -> tuple[float, float]:
    """(wall time, CPU time) of one run of ``cmd``."""
    c0 = _children_cpu()
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, cwd=cwd, env=env)
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {res.stderr.decode()[-500:]}")
    return wall, _children_cpu() - c0


def best_of_alternating(
    cases: list[tuple[list[str], Path]], env: dict[str, str], runs: int = RUNS
) -> list[tuple[float, float]]:
    """(best wall time, best CPU time) of each case, the cases run in turn in every round and
    the order rotated from round to round, so that a change of load reaches them alike."""
    seen: list[list[tuple[float, float]]] = [[] for _ in cases]
    for r in range(runs):
        for k in range(len(cases)):
            i = (k + r) % len(cases)
            seen[i].append(one_run(cases[i][0], env, cases[i][1]))
    return [(min(w for w, _ in s), min(c for _, c in s)) for s in seen]


def compile_tree(root: Path) -> None:
    for pkg in ("api", "ledger", "scheduler"):
        if (root / pkg).is_dir():
            compileall.compile_dir(root / pkg, quiet=1)


def run() -> list[Metric]:
    from ledger import db

    # this process holds the server (embedded unless PODLEDGER_DATABASE_URL): the commands
    # measured below connect to a running, migrated database, as a user's do
    url = os.environ.get("PODLEDGER_DATABASE_URL") or db.server_url()
    db.get_database(url, owner=True)  # migrated, as a user's database is
    env = dict(os.environ, PODLEDGER_DATABASE_URL=url)
    compile_tree(ROOT)
    load = os.getloadavg()[0]
    out = [Metric("load average (1 min) at start", load, "", goal="(reported)", met=True)]
    cases = [
        ("podledger --help", [PODLEDGER, "--help"], 0.25, ROOT),
        ("podledger get pods -A", [PODLEDGER, "get", "pods", "-A"], 0.4, ROOT),
    ]
    base = os.environ.get("BENCH_STARTUP_BASELINE")
    if base:
        compile_tree(Path(base))
        cli = [sys.executable, "-m", "api.cli"]
        cases += [
            ("baseline tree: --help", [*cli, "--help"], 0.25, Path(base)),
            ("baseline tree: get pods -A", [*cli, "get", "pods", "-A"], 0.4, Path(base)),
        ]
    runs = [([sys.executable, "-c", "pass"], ROOT)] + [(cmd, cwd) for _, cmd, _, cwd in cases]
    (floor, floor_cpu), *measured = best_of_alternating(runs, env)
    for (name, _, goal, _), (value, cpu) in zip(cases, measured, strict=True):
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
    from api.process import tune_gc

    tune_gc()
    main()
