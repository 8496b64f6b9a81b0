"""Merged run files of ``bench.paper`` (``--merge a.json,b.json``) and the markdown tables of
``docs/paper.md`` (allocation ratio per pod list, policy and X against the published mean; the
default list's fragmentation; the X = 100 ranking), printed by ``--merge``."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

from bench.paper_published import ALLOC, FRAG_RATIO


def load_runs(files: list[str], run_type: Any) -> list[Any]:
    """The runs of ``files``, one per (pod list, policy, seed, node order): a run found twice is
    kept once, and a differing placement digest (a non-deterministic run) is reported."""
    seen: dict[tuple[str, str, int, str], Any] = {}
    for f in files:
        for row in json.loads(Path(f).read_text()):
            row = {**row, "node_order": row.get("node_order", "index")}  # files before the option
            run = run_type(
                **{k: v for k, v in row.items() if k != "frag"},
                frag={int(x): tuple(v) for x, v in row["frag"].items()},
            )
            key = (run.trace, run.policy, run.seed, run.node_order)
            first = seen.setdefault(key, run)
            if first is not run:
                same = first.digest == run.digest and first.alloc == run.alloc and first.frag == run.frag
                print(f"{key}: found twice, {'identical' if same else 'DIFFERENT'} ({f})", file=sys.stderr)
    return list(seen.values())


def _cell(vals: list[float], pub: tuple[float, float], tol: float) -> str:
    """``ours (sd) / published (sd)``, **NO** when |ours - published mean| > ``tol``."""
    mean = statistics.mean(vals)
    ok = abs(mean - pub[0]) <= tol
    sd = f" sd {statistics.stdev(vals):.2f}" if len(vals) > 1 else ""
    return f"{mean:.2f}{sd} / {pub[0]:.2f} ({pub[1]:.2f})" + ("" if ok else f" **NO** ({mean - pub[0]:+.2f})")


def tables(runs: list[Any], traces: tuple[str, ...], policies: tuple[str, ...]) -> str:
    """Markdown: ours (mean over the seeds present, sd when > 1) / published mean (sd) per cell,
    **NO** where |ours - published| > sd + 0.5 pp; then the default list's fragmentation ratio."""
    lines = [
        "| pod list | policy | seeds | X = 90 ours / published | X = 100 | X = 130 |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    met = total = 0
    for trace in traces:
        for policy in policies:
            rs = [r for r in runs if r.trace == trace and r.policy == policy and len(r.alloc) > 130]
            if not rs:
                continue
            cells = []
            for x in (90, 100, 130):
                pub = ALLOC.get((trace, policy), {}).get(x)
                if pub is None:
                    cells.append(f"{statistics.mean(r.alloc[x] for r in rs):.2f} / -")
                    continue
                cell = _cell([r.alloc[x] for r in rs], pub, pub[1] + 0.5)
                total += 1
                met += "**NO**" not in cell
                cells.append(cell)
            seeds = ",".join(str(s) for s in sorted(r.seed for r in rs))
            lines.append(f"| {trace} | {policy} | {seeds} | " + " | ".join(cells) + " |")
    lines.append(f"\n{met} of {total} cells within sd + 0.5 pp.\n")
    lines += ["| policy | X = 50 ours / published (goal: within 1 pp) | X = 80 |", "| --- | --- | --- |"]
    for policy in policies:
        rs = [
            r for r in runs if r.trace == "default" and r.policy == policy and 50 in r.frag and 80 in r.frag
        ]
        if not rs:
            continue
        cells = []
        for x in (50, 80):
            gpus = statistics.mean(r.frag[x][0] for r in rs)
            ratio = [r.frag[x][1] for r in rs]
            pub = FRAG_RATIO.get((policy, x))
            cell = f"{gpus:.1f} GPUs, " + (
                _cell(ratio, pub, 1.0) if pub else f"{statistics.mean(ratio):.2f} % / -"
            )
            cells.append(cell)
        lines.append(f"| {policy} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
