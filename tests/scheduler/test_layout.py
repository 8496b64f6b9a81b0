"""Layout rules of scheduler/: the pure core (everything but ``scheduler/edge/``) does no DB,
clock or IO and imports neither the ledger, its own edge nor api/; the edge never reaches up
into api/ and only its worker, bridge and controllers read a clock; the decision-to-event table
covers every decision. (Module size and the import rules of
the whole tree: tests/test_import_rules.py.)"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from scheduler import decisions
from scheduler.edge.bridge import DECISION_EVENTS, DECISION_TYPES, decision_event

ROOT = Path(__file__).resolve().parents[2]
SCHED = ROOT / "scheduler"
EDGE = SCHED / "edge"
# the edge modules that may read a clock (the others are as deterministic as the core)
CLOCKED_EDGES = {"bridge.py", "worker.py", "controllers.py"}
FORBIDDEN_MODULES = ("sqlalchemy", "psycopg", "psycopg_pool", "time", "api", "ledger", "scheduler.edge")
EDGE_FORBIDDEN = ("api",)
FORBIDDEN_CALLS = {("datetime", "now"), ("datetime", "utcnow"), ("datetime", "today"), ("date", "today")}


def _modules() -> list[Path]:
    return sorted(SCHED.rglob("*.py"))


def _violations(path: Path, forbidden: tuple[str, ...] = FORBIDDEN_MODULES, clock: bool = False) -> list[str]:
    tree = ast.parse(path.read_text())
    bad: list[str] = []
    for n in ast.walk(tree):
        names: list[str] = []
        if isinstance(n, ast.Import):
            names = [a.name for a in n.names]
        elif isinstance(n, ast.ImportFrom) and n.module and n.level == 0:
            names = [n.module] + [f"{n.module}.{a.name}" for a in n.names]
        for name in names:
            if any(name == m or name.startswith(m + ".") for m in forbidden):
                bad.append(f"import {name}")
        if (
            not clock
            and isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name)
            and (n.value.id, n.attr) in FORBIDDEN_CALLS
        ):
            bad.append(f"{n.value.id}.{n.attr}")
    return bad


def test_pure_core_imports_no_db_clock_ledger_or_api() -> None:
    bad = {str(p.relative_to(ROOT)): v for p in _modules() if EDGE not in p.parents if (v := _violations(p))}
    assert bad == {}


def test_the_edge_never_reaches_up_and_reads_a_clock_only_where_it_runs() -> None:
    edge = sorted(EDGE.glob("*.py"))
    assert {p.name for p in edge} >= {"bridge.py", "worker.py", "translate.py", "controllers.py"}
    bad = {p.name: v for p in edge if (v := _violations(p, EDGE_FORBIDDEN, clock=p.name in CLOCKED_EDGES))}
    assert bad == {}


def test_the_checker_catches_what_it_forbids(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text(
        "import time\nfrom sqlalchemy import select\nfrom ledger.db import engine\nfrom api import services\n"
        "from datetime import datetime\nx = datetime.now()\n"
    )
    assert _violations(f) == [
        "import time",
        "import sqlalchemy",
        "import sqlalchemy.select",
        "import ledger.db",
        "import ledger.db.engine",
        "import api",
        "import api.services",
        "datetime.now",
    ]
    assert _violations(f, EDGE_FORBIDDEN, clock=True) == ["import api", "import api.services"]


def test_decision_events_table_covers_every_decision() -> None:
    kinds = {c for c in vars(decisions).values() if isinstance(c, type) and issubclass(c, decisions.Decision)}
    kinds -= {decisions.Decision}
    assert set(DECISION_EVENTS) == kinds
    assert DECISION_TYPES == {
        "PodBound", "PodNominated", "PodUnschedulable", "PodGated", "PodGroupConditionChanged",
        "CompositePodGroupConditionChanged", "PodGroupScheduled", "PodGroupUnschedulable", "PodGroupRetried",
        "PodPreempted", "PodGroupRequeued", "PodRequeued", "SchedulingCycleCompleted",
        "PodGroupSatisfiedChanged", "PodRetried",
    }  # fmt: skip
    req = decisions.EntityRequeued
    assert decision_event(req("pg/ns/g", "backoff", 1, 2.0))[:2] == (
        "sched/podgroup/ns/g",
        "PodGroupRequeued",
    )
    assert decision_event(req("cpg/ns/r", "active", 1))[:2] == (
        "sched/compositepodgroup/ns/r",
        "PodGroupRequeued",
    )
    assert decision_event(req("ns/p", "active", 1))[:2] == ("sched/pod/ns/p", "PodRequeued")
    cond = decisions.GroupConditionChanged("CompositePodGroup", "ns/r", "T", "True", "Scheduled", "")
    stream, typ, data = decision_event(cond)
    assert (stream, typ) == ("sched/compositepodgroup/ns/r", "CompositePodGroupConditionChanged")
    assert "kind" not in data and set(data) == {f.name for f in dataclasses.fields(cond)} - {"kind"}
    # PodGated: "report" is in the payload only when False (gate SchedulerPreEnqueuePodStatus off)
    assert "report" not in decision_event(decisions.PodGated("ns/p", "X", "m"))[2]
    assert decision_event(decisions.PodGated("ns/p", "X", "m", False))[2]["report"] is False
