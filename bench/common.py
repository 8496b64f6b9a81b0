"""Shared helpers for benchmarks: machine description, result rows, the printed table, JSON."""

from __future__ import annotations

import json
import os
import platform
from dataclasses import asdict, dataclass
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def machine() -> str:
    cpu = "unknown cpu"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f", {kb / 1024 / 1024:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    return f"{os.cpu_count()} cores {cpu}{mem}, {platform.system()} {platform.release()}, Python {platform.python_version()}"


@dataclass
class Metric:
    name: str
    value: float
    unit: str
    baseline: str | None = None
    baseline_value: float | None = None
    ratio: float | None = None
    goal: str = ""
    met: bool = True


def ratio_metric(
    name: str,
    value: float,
    unit: str,
    baseline: str,
    baseline_value: float,
    goal_ratio: float,
    higher_is_better: bool = True,
) -> Metric:
    ratio = value / baseline_value if baseline_value else float("nan")
    if higher_is_better:
        return Metric(
            name,
            value,
            unit,
            baseline,
            baseline_value,
            ratio,
            f"ratio >= {goal_ratio:g}",
            ratio >= goal_ratio,
        )
    return Metric(
        name, value, unit, baseline, baseline_value, ratio, f"ratio <= {goal_ratio:g}", ratio <= goal_ratio
    )


def write(name: str, metrics: list[Metric]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(
        json.dumps({"machine": machine(), "metrics": [asdict(m) for m in metrics]}, indent=2) + "\n"
    )
    return path


def fmt(v: float | None) -> str:
    if v is None:
        return "-"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def print_table(title: str, metrics: list[Metric]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for col in ("metric", "ours", "unit", "baseline (same run)", "baseline value", "ratio", "goal", "met"):
        table.add_column(col)
    for m in metrics:
        table.add_row(
            m.name,
            fmt(m.value),
            m.unit,
            m.baseline or "-",
            fmt(m.baseline_value),
            fmt(m.ratio),
            m.goal,
            "yes" if m.met else "NO",
        )
    Console(width=200).print(table)
