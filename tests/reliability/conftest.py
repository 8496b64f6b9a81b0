"""Shared helpers of the reliability suite: subprocesses that are always cleaned up, bounded
waits, manifests, and the ledger invariants every scenario checks afterwards.

Every process a test starts goes through the ``procs`` fixture, which kills what is still
running at teardown (also when the test failed). Every wait is a bounded poll loop.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from api.services.commands.objects import ApplyResult
from api.services.objects import load_documents
from ledger import sql as q
from ledger.database import Database
from ledger.resources.parse import parse_documents
from tests.ledger_helpers import apply

ROOT = Path(__file__).resolve().parents[2]
PODLEDGER = str(Path(sys.executable).parent / "podledger")
SEED = int(os.environ.get("PODLEDGER_RELIABILITY_SEED", "20261202"))


class Procs:
    """Subprocesses started by one test; ``kill_all`` ends the ones still running."""

    def __init__(self) -> None:
        self.items: list[subprocess.Popen[bytes]] = []

    def start(self, args: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        p = subprocess.Popen(
            args,
            cwd=ROOT,
            env=env if env is not None else dict(os.environ),
            stdout=subprocess.DEVNULL,
            stderr=log.open("ab"),
        )
        self.items.append(p)
        return p

    def kill_all(self) -> None:
        for p in self.items:
            if p.poll() is None:
                p.kill()
        for p in self.items:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:  # pragma: no cover - a zombie we cannot reap
                pass


@pytest.fixture()
def procs() -> Iterator[Procs]:
    p = Procs()
    try:
        yield p
    finally:
        p.kill_all()


@contextmanager
def dump_on_failure(*logs: Path, tail: int = 4000) -> Iterator[None]:
    """On an exception, print the tails of ``logs`` (pytest shows them with the failure)."""
    try:
        yield
    except BaseException:
        for log in logs:
            text = log.read_text(errors="replace") if log.exists() else "(missing)"
            print(f"----- {log.name} (last {tail} chars) -----\n{text[-tail:]}")
        raise


def wait_until(cond: Callable[[], Any], timeout: float, what: str, interval: float = 0.05) -> Any:
    """Poll ``cond`` until it returns a truthy value (returned) or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def start_worker(
    procs: Procs, name: str, log: Path, url: str, interval: float = 0.2, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PODLEDGER_DATABASE_URL=url, **(env or {}))
    return procs.start([PODLEDGER, "worker", "--interval", str(interval), "--name", name], log, env)


def log_count(log: Path, event: str) -> int:
    if not log.exists():
        return 0
    return log.read_text(errors="replace").count(f'"event": "{event}"')


# SQLAlchemy's pool logs these (with a traceback) when it discards a connection the server closed
POOL_NOISE = ("Exception during reset or similar", "Exception closing connection")


def unexpected_tracebacks(text: str) -> list[str]:
    """Tracebacks in a process log other than the pool's notes about dead connections (a chained
    traceback, "During handling of the above exception...", belongs to the one before it)."""
    lines = text.splitlines()
    bad = []
    for i, line in enumerate(lines):
        if not line.startswith("Traceback"):
            continue
        prev = next((p for p in reversed(lines[:i]) if p.strip()), "")
        if prev.startswith(("During handling of the above exception", "The above exception was")):
            continue
        if prev.startswith(POOL_NOISE):
            continue
        bad.append("\n".join(lines[max(0, i - 1) : i + 12]))
    return bad


def apply_text(database: Database, text: str, **kw: Any) -> ApplyResult:
    objs, errs = load_documents(parse_documents(text))
    assert not errs, errs
    res = apply(database, objs, **kw)
    assert not res.rejected, res.errors
    return res


PRIORITY_CLASSES = """\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 100
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
preemptionPolicy: PreemptLowerPriority
"""


def nodes_yaml(n: int, cpu: str = "4", prefix: str = "node") -> str:
    return "---\n".join(
        f"apiVersion: v1\nkind: Node\nmetadata: {{name: {prefix}-{i}}}\n"
        f"status: {{allocatable: {{cpu: '{cpu}', memory: 64Gi, pods: 110}}}}\n"
        for i in range(n)
    )


def pod_yaml(
    name: str, cpu: str = "100m", priority_class: str | None = None, namespace: str = "default"
) -> str:
    pc = f"  priorityClassName: {priority_class}\n" if priority_class else ""
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: {namespace}}}\nspec:\n{pc}"
        f"  containers: [{{name: c, resources: {{requests: {{cpu: {cpu}}}}}}}]\n"
    )


# ----------------------------------------------------------------------------- invariants


def scalar(database: Database, sql: str, **params: Any) -> Any:
    """The first column of the first row (psycopg placeholders ``%(name)s`` for ``params``)."""
    with database.connect() as c:
        return q.scalar(c, sql, params or None)


def rows(database: Database, sql: str, **params: Any) -> list[Any]:
    with database.connect() as c:
        return c.execute(sql, params or None).fetchall()


def event_count(database: Database) -> int:
    return int(scalar(database, "SELECT count(*) FROM events"))


def double_binds(database: Database) -> dict[str, Any]:
    """Pods bound more than once (never preempted) or bound again after their preemption."""
    bad: dict[str, Any] = {}
    for pod, binds, preempted, late in rows(
        database,
        "SELECT b.pod, b.n, p.first_pre IS NOT NULL, "
        "  (SELECT count(*) FROM events e WHERE e.type = 'PodBound' AND e.data->>'pod' = b.pod "
        "   AND e.position > p.first_pre) "
        "FROM (SELECT data->>'pod' AS pod, count(*) AS n FROM events WHERE type = 'PodBound' GROUP BY 1) b "
        "LEFT JOIN (SELECT data->>'victim' AS pod, min(position) AS first_pre FROM events "
        "           WHERE type = 'PodPreempted' GROUP BY 1) p USING (pod)",
    ):
        if (not preempted and binds > 1) or (preempted and late):
            bad[pod] = {"binds": binds, "preempted": preempted, "bound_after_preemption": late}
    return bad


def decisions_without_cycle(database: Database) -> list[Any]:
    """Decision events with no SchedulingCycleCompleted of the same cycle, actor and transaction
    after them (``tx_id`` is the inserting transaction). A retry that changed nothing (PodRetried,
    PodGroupRetried with ``attempts``) is a whole cycle in one event: it has none."""
    from scheduler.edge.bridge import DECISION_TYPES

    types = sorted(DECISION_TYPES - {"SchedulingCycleCompleted"})
    return rows(
        database,
        "SELECT d.position, d.type, d.meta->>'cycle' FROM events d "
        "WHERE d.type = ANY(%(types)s) AND d.type <> 'PodRetried' "
        "AND NOT (d.type = 'PodGroupRetried' AND d.data->'attempts' IS NOT NULL) AND NOT EXISTS ("
        "  SELECT 1 FROM events c WHERE c.type = 'SchedulingCycleCompleted' AND c.tx_id = d.tx_id "
        "  AND c.position > d.position AND c.data->>'cycle' = d.meta->>'cycle' "
        "  AND c.meta->>'actor' = d.meta->>'actor') ORDER BY d.position LIMIT 20",
        types=types,
    )


def interleaved_transactions(database: Database) -> list[Any]:
    """Transactions whose events do not occupy one contiguous run of positions."""
    return rows(
        database,
        "SELECT t.tx_id::text, t.lo, t.hi, t.n FROM ("
        "  SELECT tx_id, min(position) AS lo, max(position) AS hi, count(*) AS n FROM events GROUP BY tx_id) t "
        "WHERE EXISTS (SELECT 1 FROM events o WHERE o.position BETWEEN t.lo AND t.hi AND o.tx_id <> t.tx_id) "
        "LIMIT 20",
    )


def stream_gaps(database: Database) -> list[Any]:
    """Streams whose versions are not exactly 1..n, or whose ``streams`` row disagrees."""
    return rows(
        database,
        "SELECT e.stream, e.n, e.lo, e.hi, s.version FROM ("
        "  SELECT stream, count(*) AS n, min(version) AS lo, max(version) AS hi FROM events GROUP BY stream) e "
        "FULL JOIN streams s USING (stream) "
        "WHERE e.n IS NULL OR s.version IS NULL OR e.lo <> 1 OR e.hi <> e.n OR s.version <> e.n LIMIT 20",
    )


def objects_snapshot(database: Database) -> list[Any]:
    return rows(
        database,
        "SELECT kind, namespace, name, uid, object::text, status::text, created_position, updated_position, "
        "created_at, updated_at FROM objects ORDER BY kind, namespace, name",
    )


def assert_projection_equals_replay(database: Database) -> int:
    from ledger.projections.runner import rebuild_current

    before = objects_snapshot(database)
    rebuild_current(database)
    after = objects_snapshot(database)
    if before != after:
        b, a = {r[:3]: r for r in before}, {r[:3]: r for r in after}
        diff = [(k, b.get(k), a.get(k)) for k in sorted(set(b) | set(a)) if b.get(k) != a.get(k)]
        raise AssertionError(f"objects differ from a full replay ({len(diff)} rows), first: {diff[:3]}")
    return len(after)
