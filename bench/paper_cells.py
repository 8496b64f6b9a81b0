"""The cells of ``bench/results/paper.json``: one per (pod list, policy, X), with every run's value
and placement digest, against the artifact's published mean and sd (``bench/paper_published.py``).

A cell is *within* when |our mean - published mean| <= published sd + 0.5 pp (allocation) or
<= 1 pp (the fragmentation ratio, whose published sd is not used as a tolerance)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import Metric, machine
from bench.paper_published import ALLOC, FRAG_RATIO

X_CELLS = (90, 100, 130)
FRAG_CELLS = (50, 80)
ALLOC_PP = 0.5
FRAG_PP = 1.0


def _stats(vals: list[float]) -> tuple[float, float | None]:
    return statistics.mean(vals), (statistics.stdev(vals) if len(vals) > 1 else None)


def _cell(
    trace: str, policy: str, metric: str, x: int, rs: list[Any], vals: list[float], pub: Any, tol: float
) -> dict[str, Any]:
    mean, sd = _stats(vals)
    cell: dict[str, Any] = {
        "list": trace,
        "policy": policy,
        "metric": metric,
        "x": x,
        "seeds": len(vals),
        "ours": round(mean, 3),
        "ours_sd": None if sd is None else round(sd, 3),
        "published": None,
        "published_sd": None,
        "tolerance_pp": None,
        "within": None,
        "runs": [
            {"seed": r.seed, "value": round(v, 3), "digest": r.digest, "verified": r.verified}
            for r, v in zip(rs, vals, strict=True)
        ],
    }
    if pub is not None:
        allowed = (pub[1] if metric == "alloc" else 0.0) + tol
        cell.update(
            published=pub[0],
            published_sd=pub[1],
            tolerance_pp=round(allowed, 3),
            within=abs(mean - pub[0]) <= allowed,
        )
    return cell


def cells(
    runs: Sequence[Any], traces: Sequence[str], policies: Sequence[str], xs: Sequence[int] = X_CELLS
) -> list[dict[str, Any]]:
    """Every (pod list, policy, X) the runs reach: allocation at ``xs`` for every list, the
    fragmentation ratio at ``FRAG_CELLS`` for the default list; runs in seed order."""
    out: list[dict[str, Any]] = []
    for trace in traces:
        for policy in policies:
            rs = sorted(
                (r for r in runs if r.trace == trace and r.policy == policy and len(r.alloc) > max(xs)),
                key=lambda r: r.seed,
            )
            if not rs:
                continue
            for x in xs:
                pub = ALLOC.get((trace, policy), {}).get(x)
                out.append(_cell(trace, policy, "alloc", x, rs, [r.alloc[x] for r in rs], pub, ALLOC_PP))
            if trace != "default":
                continue
            for x in FRAG_CELLS:
                fr = [r for r in rs if x in r.frag]
                if fr:
                    vals = [r.frag[x][1] for r in fr]
                    pub = FRAG_RATIO.get((policy, x))
                    out.append(_cell(trace, policy, "frag_ratio", x, fr, vals, pub, FRAG_PP))
    return out


def count_within(cs: Sequence[dict[str, Any]], metric: str = "alloc") -> tuple[int, int, int]:
    """(within, compared, cells) of ``metric``."""
    mine = [c for c in cs if c["metric"] == metric]
    compared = [c for c in mine if c["within"] is not None]
    return sum(1 for c in compared if c["within"]), len(compared), len(mine)


def write_results(path: Path, metrics: Sequence[Metric], cs: Sequence[dict[str, Any]]) -> Path:
    """``bench/results/paper.json``: the machine, the summary metrics and every cell."""
    from dataclasses import asdict

    path.parent.mkdir(parents=True, exist_ok=True)
    within, compared, total = count_within(cs)
    doc = {
        "machine": machine(),
        "metrics": [asdict(m) for m in metrics],
        "cells_within": {"within": within, "compared": compared, "cells": total},
        "cells": list(cs),
    }
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path
