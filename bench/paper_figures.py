"""Figures of ``docs/paper.md`` from ``bench.paper`` runs (matplotlib, the ``paper`` extra)."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Any

from bench.paper_published import ALLOC

POLICIES = ("Random", "DotProduct", "GpuClustering", "GpuPacking", "BestFit", "FGD")
TRACES = ("default", "gpuspec33", "multigpu50")
X_REPORTED = (90, 100, 130)
PUBLISHED = {(trace, policy, x): v for (trace, policy), xs in ALLOC.items() for x, v in xs.items()}


def plot(runs: list[Any], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed (pip install -e '.[paper]'): no plot", file=sys.stderr)
        return False
    traces = [t for t in TRACES if any(r.trace == t for r in runs)]
    fig, axes = plt.subplots(1, len(traces), figsize=(6 * len(traces), 4.5), squeeze=False)
    for ax, trace in zip(axes[0], traces, strict=True):
        for i, policy in enumerate(POLICIES):
            rs = [r for r in runs if r.trace == trace and r.policy == policy and r.alloc]
            if not rs:
                continue
            n = min(len(r.alloc) for r in rs)
            mean = [statistics.mean(r.alloc[x] for r in rs) for x in range(n)]
            ax.plot(range(n), mean, label=policy, color=f"C{i}")
            pubs = [(x, PUBLISHED[(trace, policy, x)]) for x in X_REPORTED if (trace, policy, x) in PUBLISHED]
            if pubs:
                ax.errorbar(
                    [x + (i - 2.5) * 0.4 for x, _ in pubs],
                    [v[0] for _, v in pubs],
                    yerr=[v[1] for _, v in pubs],
                    fmt="o",
                    ms=3,
                    color=f"C{i}",
                    capsize=2,
                )
        ax.plot([0, 100], [0, 100], color="grey", lw=0.5, ls=":")
        ax.set_xlim(60, 132)
        ax.set_ylim(60, 100)
        ax.set_title(f"openb {trace}: ours (lines), published X=90/100/130 (dots, sd)")
        ax.set_xlabel("arrived GPU demand X (% of capacity)")
        ax.set_ylabel("GPU allocation ratio (%)")
        ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    return True
