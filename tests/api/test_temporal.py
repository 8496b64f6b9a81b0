"""The temporal projection (issue 14, item 1 and 2) against the full fold it replaces.

Every scenario of tests/scenarios is run on a fresh ledger through the simulator (the real write
path: apply, scheduling, deletes, preemption). Then, event by event, a scratch ``objects`` table is
folded from position 0 with the live projection's fold (the oracle: what ``objects_at`` did before)
and, at every position:

- the temporal rows (``objects_at_position``) equal the folded rows, every column;
- ``quota_used`` of every namespace equals the bound-pod scan of the folded table;
- where a scheduling run's recorded decisions end (and live, at the head), ``explain`` of every
  pod, pod group and composite pod group alive there, and at every other decision the explain of
  what it changed (and of the groups above it), equals explain read one query at a time
  (``tests/api/explain_oracle.py``, its reads answered by the oracle's table and the namespace scan).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml

from api.services import explain as explain_service
from api.services.simulate import Simulation, load_scenario
from ledger import db, store
from ledger.database import Database
from ledger.projections import temporal
from ledger.projections.current import project
from ledger.projections.runner import rebuild_current
from ledger.sql import Conn, dicts
from scheduler.edge.bridge import DECISION_TYPES
from tests.api.explain_oracle import explain_by_queries

SCENARIOS = sorted((Path(__file__).parents[1] / "scenarios").glob("*.yaml"))
COLUMNS = (
    "kind, namespace, name, uid, object, status, created_position, updated_position, created_at, updated_at"
)
EXPLAINED = ("Pod", "PodGroup", "CompositePodGroup")


def _run(database: Database, path: Path) -> None:
    name, spec = load_scenario(yaml.safe_load(path.read_text()))
    Simulation(database, spec, name).run(list(spec["steps"]))


def _rows(conn: Conn, sql: str) -> list[dict[str, Any]]:
    return dicts(conn, sql)


class Oracle:
    """A session whose temporary ``objects`` table is the full fold up to ``self.position``."""

    def __init__(self, database: Database) -> None:
        self.conn = psycopg.connect(database.login_url)  # a session of its own, transactional
        self.conn.execute("CREATE TEMP TABLE objects (LIKE public.objects INCLUDING ALL)")
        self.conn.commit()
        self.position = 0

    def advance(self, event: store.StoredEvent) -> None:
        with self.conn.transaction():
            project(self.conn, [event], temporal=False)
        self.position = event.position

    @contextmanager
    def objects_at(self, database: Database, position: int) -> Iterator[Conn]:
        assert position == self.position
        yield self.conn
        self.conn.rollback()


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_temporal_state_equals_full_fold_at_every_position(
    database: Database, db_url: str, path: Path
) -> None:
    _run(database, path)
    events = list(store.iter_all(database))
    assert events, "the scenario appended nothing"
    # the rebuild from the log yields the same tables as the inline maintenance
    dumps = {
        "object_versions": "SELECT * FROM object_versions ORDER BY kind, namespace, name, valid_from",
        "quota_usage": "SELECT * FROM quota_usage ORDER BY namespace, valid_from",
        "objects": "SELECT * FROM objects ORDER BY kind, namespace, name",
    }
    with database.connect() as conn:
        before = {t: _rows(conn, q) for t, q in dumps.items()}
    rebuild_current(database)
    with database.connect() as conn:
        assert {t: _rows(conn, q) for t, q in dumps.items()} == before

    # the oracle's temporary table needs TEMP, which only the owner has (migration 0024)
    oracle = Oracle(db.get_database(db_url, migrate_on_start=False, owner=True))
    explained = 0
    prev: dict[tuple[str, str, str], dict[str, Any]] = {}
    try:
        with database.connect() as conn:
            for i, ev in enumerate(events):
                oracle.advance(ev)
                p = ev.position
                want = _rows(oracle.conn, f"SELECT {COLUMNS} FROM objects ORDER BY kind, namespace, name")
                got = [{c: r[c] for c in COLUMNS.split(", ")} for r in temporal.objects_at_position(conn, p)]
                diff = [(g, w) for g, w in zip(got, want, strict=False) if g != w]
                assert got == want, f"{path.stem}: state differs at position {p} ({ev.type}): {diff[:1]}"
                namespaces = {r["namespace"] for r in want if r["kind"] == "Pod"}
                for ns in sorted(namespaces):
                    assert temporal.quota_used(conn, ns, p) == temporal.scan_quota_used(oracle.conn, ns), (
                        f"{path.stem}: quota use of {ns} differs at position {p}"
                    )
                oracle.conn.rollback()
                now = {(r["kind"], r["namespace"], r["name"]): r for r in want}
                changed = {k for k, r in now.items() if prev.get(k) != r}
                prev = now
                if ev.type not in DECISION_TYPES:
                    continue
                nxt = events[i + 1] if i + 1 < len(events) else None
                if nxt is None or nxt.type not in DECISION_TYPES:
                    targets = set(now)  # where a scheduling run's decisions end, and live at the head
                else:  # inside a run: what the decision changed, and the groups above it
                    targets = set(changed)
                    for kind, ns, _name in changed:
                        spec = now[(kind, ns, _name)]["object"].get("spec") or {}
                        if kind == "Pod" and (spec.get("schedulingGroup") or {}).get("podGroupName"):
                            targets.add(("PodGroup", ns, spec["schedulingGroup"]["podGroupName"]))
                        if kind == "PodGroup" and spec.get("parentCompositePodGroupName"):
                            targets.add(("CompositePodGroup", ns, spec["parentCompositePodGroupName"]))
                for key in sorted(targets):
                    r = now.get(key)
                    if r is None or r["kind"] not in EXPLAINED:
                        continue
                    live = p == events[-1].position  # at the head: the live path (None)
                    new = explain_service.explain(
                        database, r["kind"], r["namespace"], r["name"], at=None if live else p
                    )
                    # the reference: one query at a time (`new` is one statement, live at the
                    # head, over the temporal projection before it)
                    old = explain_by_queries(
                        database,
                        r["kind"],
                        r["namespace"],
                        r["name"],
                        at=p,
                        objects_at=oracle.objects_at,
                        quota_used=lambda c, ns, _p: temporal.scan_quota_used(c, ns),
                    )
                    assert new == old, f"{path.stem}: explain {r['kind']} {r['name']} differs at {p}"
                    explained += 1
    finally:
        oracle.conn.close()
    assert explained > 0 or not any(e.type in DECISION_TYPES for e in events)
