"""Render bench/results/*.json as Markdown tables (``python -m bench.report``).

``make bench`` runs it last and writes the output between the markers of docs/benchmarks.md,
so the document always shows the latest run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from bench.common import RESULTS, fmt

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
BEGIN, END = "<!-- latest-results:begin -->", "<!-- latest-results:end -->"
ORDER = ["append", "core", "endtoend", "scale", "preemption", "trace"]


def render() -> str:
    files = sorted(
        RESULTS.glob("*.json"), key=lambda p: (ORDER.index(p.stem) if p.stem in ORDER else 99, p.stem)
    )
    out = []
    machine = ""
    for path in files:
        doc = json.loads(path.read_text())
        machine = doc.get("machine", machine)
        out.append(f"### `{path.stem}` (`python -m bench.{path.stem.split('-')[0]}`)\n")
        out.append("| metric | ours | unit | baseline (same run) | baseline value | ratio | goal | met |")
        out.append("|---|---|---|---|---|---|---|---|")
        for m in doc["metrics"]:
            out.append(
                f"| {m['name']} | {fmt(m['value'])} | {m['unit']} | {m.get('baseline') or '-'} | "
                f"{fmt(m.get('baseline_value'))} | {fmt(m.get('ratio'))} | {m.get('goal', '')} | "
                f"{'yes' if m.get('met') else '**no**'} |"
            )
        out.append("")
    head = f"Machine: {machine}. Command: `make bench` (or `.venv/bin/python -m bench`).\n\n"
    return head + "\n".join(out)


def main() -> None:
    text = render()
    if "--write" in sys.argv and DOC.exists():
        doc = DOC.read_text()
        if BEGIN in doc and END in doc:
            a, b = doc.index(BEGIN) + len(BEGIN), doc.index(END)
            DOC.write_text(doc[:a] + "\n" + text + "\n" + doc[b:])
            print(f"updated {DOC}")
            return
    print(text)


if __name__ == "__main__":
    main()
