"""``bench.paper --jobs N``: the runs of a study split over N processes, whole (pod list, seed)
groups each (a group's runs share one inputs ledger), each writing its own run file beside
``--out``; the parent merges them when all have ended."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.paper_report import load_runs

ROOT = Path(__file__).resolve().parent.parent


def write_runs(path: str, runs: list[Any]) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    rows = [{k: v for k, v in r.__dict__.items() if k not in ("placements", "inspected")} for r in runs]
    Path(path).write_text(json.dumps(rows, indent=1))


def shard_plan(combos: list[tuple[str, str, int]], verify: list[bool], jobs: int) -> list[list[list[Any]]]:
    """``combos`` split into ``jobs`` plans, whole (pod list, seed) groups each (their runs share
    one inputs ledger), the groups dealt in turn in the order they come."""
    groups: dict[tuple[str, int], int] = {}
    plans: list[list[list[Any]]] = [[] for _ in range(jobs)]
    for (tr, po, seed), ver in zip(combos, verify, strict=True):
        g = groups.setdefault((tr, seed), len(groups))
        plans[g % jobs].append([tr, po, seed, ver])
    return plans


def run_shards(
    args: argparse.Namespace,
    combos: list[tuple[str, str, int]],
    verify: list[bool],
    jobs: int,
    run_type: Any,
    prior: list[Any],
) -> list[Any]:
    """The runs in ``jobs`` processes (``python -m bench.paper --plan``), each with its own run
    file beside ``--out``; once all have ended (a failed shard fails the whole), ``--out`` holds
    ``prior`` (the runs kept by ``--resume``) and theirs, which are returned."""
    out = Path(args.out)
    procs: list[tuple[subprocess.Popen[bytes], Path]] = []
    for k, plan in enumerate(shard_plan(combos, verify, jobs)):
        plan_file = out.with_name(f"{out.stem}.shard{k}.plan.json")
        part = out.with_name(f"{out.stem}.shard{k}.json")
        plan_file.parent.mkdir(parents=True, exist_ok=True)
        plan_file.write_text(json.dumps(plan))
        cmd = [sys.executable, "-m", "bench.paper", "--plan", str(plan_file), "--shard", f"{k + 1}/{jobs}"]
        cmd += ["--out", str(part), "--node-order", args.node_order]
        if args.limit is not None:
            cmd += ["--limit", str(args.limit)]
        procs.append((subprocess.Popen(cmd, cwd=ROOT), part))
    failed = [k + 1 for k, (p, _) in enumerate(procs) if p.wait() != 0]
    if failed:
        raise SystemExit(f"paper: shard(s) {failed} of {jobs} failed; --resume reruns what is missing")
    runs: list[Any] = load_runs([str(part) for _, part in procs], run_type)
    write_runs(args.out, prior + runs)
    return runs
