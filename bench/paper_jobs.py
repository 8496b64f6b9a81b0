"""``bench.paper --jobs N``: the runs of a study split over N processes, whole (pod list, seed)
groups each (a group's runs share one inputs ledger), each process writing its own run file
beside ``--out``; the parent merges them when all have ended.

The groups are not dealt in advance: every process holds the whole plan (the groups, longest
first) and takes the next group nobody has taken yet (a claim file created with ``O_EXCL`` in a
directory beside ``--out``), so a process that drew short groups takes more of them and the
processes end within about one group of each other (longest first: the last groups are short)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.paper_report import load_runs

ROOT = Path(__file__).resolve().parent.parent

Group = list[list[Any]]  # the [trace, policy, seed, verify] runs of one (pod list, seed)


def write_runs(path: str, runs: list[Any]) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    rows = [{k: v for k, v in r.__dict__.items() if k not in ("placements", "inspected")} for r in runs]
    Path(path).write_text(json.dumps(rows, indent=1))


def group_plan(
    combos: list[tuple[str, str, int]], verify: list[bool], cost: Callable[[str, int, list[bool]], float]
) -> list[Group]:
    """``combos`` as (pod list, seed) groups, their runs in the order they come, the groups by
    ``cost(trace, seed, verify flags)`` descending (ties: the order they come)."""
    groups: dict[tuple[str, int], Group] = {}
    for (tr, po, seed), ver in zip(combos, verify, strict=True):
        groups.setdefault((tr, seed), []).append([tr, po, seed, ver])
    order = sorted(groups, key=lambda k: -cost(k[0], k[1], [bool(r[3]) for r in groups[k]]))
    return [groups[k] for k in order]


def claimed_groups(plan: list[Group], claims: Path) -> Iterator[tuple[int, Group]]:
    """The groups of ``plan`` this process takes, in plan order: each one that no other process
    has claimed (its claim file ``claims/<index>`` created here, exclusively)."""
    for i, group in enumerate(plan):
        try:
            os.close(os.open(claims / str(i), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            continue
        yield i, group


def unclaimed(plan: list[Group], claims: Path) -> list[int]:
    """The indexes of the groups no process has taken yet."""
    return [i for i in range(len(plan)) if not (claims / str(i)).exists()]


def run_shards(
    args: argparse.Namespace, plan: list[Group], jobs: int, run_type: Any, prior: list[Any]
) -> list[Any]:
    """The groups of ``plan`` in ``jobs`` processes (``python -m bench.paper --plan``), each
    taking the next unclaimed group and writing its runs to its own file beside ``--out``; once
    all have ended (a failed process fails the whole), ``--out`` holds ``prior`` (the runs kept by
    ``--resume``) and theirs, which are returned."""
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    plan_file = out.with_name(f"{out.stem}.plan.json")
    plan_file.write_text(json.dumps(plan))
    claims = out.with_name(f"{out.stem}.claims")
    shutil.rmtree(claims, ignore_errors=True)
    claims.mkdir()
    procs: list[tuple[subprocess.Popen[bytes], Path]] = []
    for k in range(jobs):
        part = out.with_name(f"{out.stem}.shard{k}.json")
        part.unlink(missing_ok=True)
        cmd = [sys.executable, "-m", "bench.paper", "--plan", str(plan_file), "--claims", str(claims)]
        cmd += ["--shard", f"{k + 1}/{jobs}", "--out", str(part), "--node-order", args.node_order]
        if args.limit is not None:
            cmd += ["--limit", str(args.limit)]
        procs.append((subprocess.Popen(cmd, cwd=ROOT), part))
    failed = [k + 1 for k, (p, _) in enumerate(procs) if p.wait() != 0]
    if failed:
        raise SystemExit(f"paper: process(es) {failed} of {jobs} failed; --resume reruns what is missing")
    shutil.rmtree(claims, ignore_errors=True)
    runs: list[Any] = load_runs([str(part) for _, part in procs if part.is_file()], run_type)
    write_runs(args.out, prior + runs)
    return runs
