"""``podledger simulate``: run a Scenario (DESIGN.md §5) on a fresh, private ledger.

Every run creates its own database (cloned from a migrated template database kept per
schema revision, so a run costs a CREATE DATABASE, not a migration), applies the steps through
the same commands as ``podledger apply`` and ``delete`` (one unit of work per step), drives the
scheduler on a virtual clock starting at 2026-01-01T00:00:00Z, checks the expectations against
the projections, and drops the database.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import psycopg

from api.services.commands.objects import ApplyResult, apply_objects, delete_object
from api.services.objects import load_documents
from api.services.replay import verify_replay
from ledger import db
from ledger.database import Database
from ledger.queries import log as log_q
from ledger.queries.objects import list_objects
from ledger.resources.parse import Document
from ledger.sql import Conn
from scheduler.edge.bridge import Bridge, config_from, from_ts

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")


class ScenarioError(Exception):
    """The scenario file itself is invalid (not a failed expectation)."""


def parse_duration(value: Any) -> float:
    if isinstance(value, int | float):
        return float(value)
    text = str(value).strip()
    pos, total = 0, 0.0
    for mt in _DURATION.finditer(text):
        if mt.start() != pos:
            break
        n, unit = float(mt.group(1)), mt.group(2)
        total += n * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]
        pos = mt.end()
    if pos != len(text) or not text:
        raise ScenarioError(f"invalid duration {value!r} (use e.g. 30s, 5m, 1h30m)")
    return total


def _template_name() -> str:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    cfg = Config(str(db.ROOT / "alembic.ini"))
    cfg.set_main_option("script_location", str(db.ROOT / "alembic"))
    cfg.set_main_option("version_locations", str(db.ROOT / "migrations" / "versions"))
    head = ScriptDirectory.from_config(cfg).get_current_head()
    return f"podledger_tmpl_{head}"


def _ensure_template(admin: str, base: str) -> str:
    name = _template_name()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(7243150003)")
        try:
            if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is None:
                conn.execute(f'CREATE DATABASE "{name}"')
                try:
                    db.migrate(db.with_database(base, name))
                except Exception:
                    conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                    raise
        finally:
            conn.execute("SELECT pg_advisory_unlock(7243150003)")
    return name


@contextmanager
def private_ledger() -> Iterator[Database]:
    base = db.libpq_url(db.server_url())
    admin = db.with_database(base, "postgres")
    template = _ensure_template(admin, base)
    name = f"podledger_sim_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    url = db.with_database(base, name)
    database = db.get_database(url, migrate_on_start=False)
    try:
        yield database
    finally:
        db.dispose(url)
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@dataclass
class Report:
    scenario: str
    failures: list[str] = field(default_factory=list)
    pods: dict[str, Any] = field(default_factory=dict)
    pod_groups: dict[str, Any] = field(default_factory=dict)
    composite_pod_groups: dict[str, Any] = field(default_factory=dict)
    preemptions: list[dict[str, Any]] = field(default_factory=list)
    events: int = 0
    replay_runs: int = 0

    @property
    def passed(self) -> bool:
        return not self.failures

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "passed": self.passed,
            "failures": self.failures,
            "pods": self.pods,
            "podGroups": self.pod_groups,
            "compositePodGroups": self.composite_pod_groups,
            "preemptions": self.preemptions,
            "events": self.events,
        }


class Simulation:
    def __init__(self, database: Database, spec: Mapping[str, Any], name: str) -> None:
        self.db = database
        self.name = name
        self.now = EPOCH.timestamp()
        self.bridge = Bridge(database, config_from(None), actor="scenario")
        self.report = Report(name)
        self.config = spec.get("config") or {}
        self.steps_done = 0  # numbers steps across run() calls: idempotency keys stay unique

    def _objects(self, items: Any, step: int) -> list[Any]:
        if not isinstance(items, list):
            raise ScenarioError(f"step {step}: apply must be a list of manifests")
        docs = [
            Document(index=i + 1, source=f"{self.name} step {step}", raw=raw) for i, raw in enumerate(items)
        ]
        objects, errors = load_documents(docs)
        if errors:
            raise ScenarioError("; ".join(errors))
        return objects

    def schedule(self) -> None:
        self.bridge.run_until_idle(self.now)

    def advance(self, seconds: float) -> None:
        end = self.now + seconds
        while True:
            nxt = self.bridge.scheduler.next_timer(self.now)
            if nxt is None or nxt > end:
                break
            self.now = max(self.now, nxt)
            self.schedule()
        self.now = end
        self.schedule()

    def run(self, steps: list[Mapping[str, Any]]) -> Report:
        if self.config and self.steps_done == 0:
            # The configuration goes into the log like any other input, so replays and
            # what-ifs see exactly what this run saw.
            manifest = {
                "apiVersion": "podledger.io/v1alpha1",
                "kind": "SchedulerConfig",
                "metadata": {"name": "default"},
                "spec": dict(self.config),
            }
            res = self._apply(self._objects([manifest], 0), "spec.config", f"{self.name}:config")
            if res.rejected:
                raise ScenarioError("spec.config: " + "; ".join(res.errors))
        for step in steps:
            self.steps_done += 1
            i = self.steps_done
            if not isinstance(step, Mapping) or not step:
                raise ScenarioError(f"step {i}: must be a mapping with apply, delete, advance or expect")
            if "apply" in step:
                self._apply(self._objects(step["apply"], i), f"step {i}", f"{self.name}:step:{i}")
                if step.get("schedule", True):
                    self.schedule()
            elif "delete" in step:
                for j, ref in enumerate(step["delete"] or []):
                    try:
                        with self.db.unit_of_work() as uow:
                            delete_object(
                                uow,
                                ref["kind"],
                                ref.get("namespace"),
                                ref["name"],
                                actor="scenario",
                                effective_at=from_ts(self.now),
                                idempotency_key=f"{self.name}:step:{i}:delete:{j}",
                            )
                            uow.commit()
                    except LookupError as exc:
                        raise ScenarioError(f"step {i}: {exc}") from None
                if step.get("schedule", True):
                    self.schedule()
            elif "advance" in step:
                self.advance(parse_duration(step["advance"]))
            elif "expect" in step:
                self.check(step["expect"] or {}, i)
            else:
                raise ScenarioError(f"step {i}: unknown step {sorted(step)}")
        self.collect()
        return self.report

    def _apply(self, objects: list[Any], source: str, key: str) -> ApplyResult:
        """``objects`` applied as one unit of work (a refusal commits its AdmissionRejected)."""
        with self.db.unit_of_work() as uow:
            res = apply_objects(
                uow,
                objects,
                actor="scenario",
                source=source,
                effective_at=from_ts(self.now),
                idempotency_key=key,
            )
            uow.commit()
        return res

    # -- reading state back from the ledger -------------------------------------------------
    def _state(self) -> dict[str, Any]:
        with self.db.snapshot() as conn:  # one pooled connection and one snapshot for every read
            return self._read_state(conn)

    def _read_state(self, conn: Conn) -> dict[str, Any]:
        pods: dict[str, Any] = {}
        groups: dict[str, Any] = {}
        cgroups: dict[str, Any] = {}
        for r in list_objects(conn, "Pod"):
            st = r.status
            pods[f"{r.namespace}/{r.name}"] = {
                "node": st.get("nodeName") if st.get("phase") == "Bound" else None,
                "phase": st.get("phase") or "Pending",
                "nominatedNode": st.get("nominatedNodeName"),
                "conditions": [
                    {k: c.get(k) for k in ("type", "status", "reason", "message")}
                    for c in st.get("conditions") or []
                ],
            }
        for kind, target in (("PodGroup", groups), ("CompositePodGroup", cgroups)):
            for r in list_objects(conn, kind):
                conds = [
                    {k: c.get(k) for k in ("type", "status", "reason", "message")}
                    for c in r.status.get("conditions") or []
                ]
                target[f"{r.namespace}/{r.name}"] = {"conditions": conds}
        pre = log_q.preemptions(conn)
        rejected = log_q.rejections(conn)
        count = log_q.count(conn)
        return {
            "pods": pods,
            "groups": groups,
            "cgroups": cgroups,
            "preemptions": pre,
            "rejected": rejected,
            "events": count,
        }

    def collect(self) -> None:
        s = self._state()
        # the pods of the JSON report keep the fields of the contract (DESIGN.md §5)
        pods = {k: {f: v for f, v in p.items() if f != "conditions"} for k, p in s["pods"].items()}
        self.report.pods, self.report.pod_groups = pods, s["groups"]
        self.report.composite_pod_groups, self.report.preemptions = s["cgroups"], s["preemptions"]
        self.report.events = int(s["events"])

    def check(self, expect: Mapping[str, Any], step: int) -> None:
        s = self._state()
        fail = self.report.failures.append
        for key, want in (expect.get("pods") or {}).items():
            got = s["pods"].get(key)
            if got is None:
                fail(f"step {step}: pod {key}: not found")
                continue
            if "node" in want and got["node"] != want["node"]:
                fail(
                    f"step {step}: pod {key}: expected node {want['node']}, got {got['node'] or 'none'} ({got['phase']})"
                )
            if "bound" in want and (got["phase"] == "Bound") != bool(want["bound"]):
                fail(f"step {step}: pod {key}: expected bound={want['bound']}, got phase {got['phase']}")
            if "preempted" in want and (got["phase"] == "Preempted") != bool(want["preempted"]):
                fail(
                    f"step {step}: pod {key}: expected preempted={want['preempted']}, got phase {got['phase']}"
                )
            if "nodeIn" in want and got["node"] not in want["nodeIn"]:
                fail(
                    f"step {step}: pod {key}: expected a node in {want['nodeIn']}, got {got['node'] or 'none'}"
                )
            if "nominatedNode" in want and got["nominatedNode"] != want["nominatedNode"]:
                fail(
                    f"step {step}: pod {key}: expected nominatedNode {want['nominatedNode']}, got {got['nominatedNode']}"
                )
            _check_conditions(fail, step, f"pod {key}", got["conditions"], want.get("conditions"))
        for section, table, ctype in (
            ("podGroups", "groups", "PodGroupInitiallyScheduled"),
            ("compositePodGroups", "cgroups", "CompositePodGroupInitiallyScheduled"),
        ):
            for key, want in (expect.get(section) or {}).items():
                got = s[table].get(key)
                if got is None:
                    fail(f"step {step}: {section} {key}: not found")
                    continue
                _check_conditions(fail, step, f"{section} {key}", got["conditions"], want.get("conditions"))
                if not {"status", "reason", "messageContains"} & set(want):
                    continue
                cond = next((c for c in got["conditions"] if c["type"] == ctype), None)
                if cond is None:
                    if want.get("status") not in (None, "Unknown"):
                        fail(
                            f"step {step}: {key}: no {ctype} condition yet (expected {want.get('status')}/{want.get('reason')})"
                        )
                    continue
                if "status" in want and cond["status"] != str(want["status"]):
                    fail(
                        f"step {step}: {key}: expected status {want['status']}, got {cond['status']} ({cond['reason']}: {cond['message']})"
                    )
                if "reason" in want and cond["reason"] != want["reason"]:
                    fail(
                        f"step {step}: {key}: expected reason {want['reason']}, got {cond['reason']} ({cond['message']})"
                    )
                if "messageContains" in want and str(want["messageContains"]) not in (cond["message"] or ""):
                    fail(
                        f"step {step}: {key}: message {cond['message']!r} does not contain {want['messageContains']!r}"
                    )
        if "preempted" in expect:
            want_set = sorted(expect["preempted"] or [])
            got_set = sorted({p["victim"] for p in s["preemptions"]})
            if want_set != got_set:
                fail(f"step {step}: expected preempted {want_set}, got {got_set}")
        for want in expect.get("rejected") or []:
            found = False
            for rec in s["rejected"]:
                for r in rec.get("rejected", []):
                    if (
                        r.get("kind") == want.get("kind")
                        and (r.get("namespace") or "") == (want.get("namespace") or "")
                        and r.get("name") == want.get("name")
                        and str(want.get("messageContains", "")) in r.get("message", "")
                    ):
                        found = True
            if not found:
                fail(
                    f"step {step}: expected a rejection of {want.get('kind')} {want.get('namespace', '')}/{want.get('name')}"
                    f" containing {want.get('messageContains', '')!r}"
                )


def _check_conditions(
    fail: Any, step: int, what: str, got: list[dict[str, Any]], want: Mapping[str, Any] | None
) -> None:
    """``conditions: {TYPE: {status, reason, messageContains}}``: any condition type of the object
    (DESIGN.md §5). ``status: Unknown`` (or no status) also accepts a condition not written yet."""
    for ctype, w in sorted((want or {}).items()):
        w = w or {}
        cond = next((c for c in got if c["type"] == ctype), None)
        if cond is None:
            if str(w.get("status", "Unknown")) != "Unknown":
                fail(
                    f"step {step}: {what}: no {ctype} condition (expected {w.get('status')}/{w.get('reason')})"
                )
            continue
        if "status" in w and cond["status"] != str(w["status"]):
            fail(
                f"step {step}: {what}: {ctype}: expected status {w['status']}, got {cond['status']}"
                f" ({cond['reason']}: {cond['message']})"
            )
        if "reason" in w and cond["reason"] != w["reason"]:
            fail(
                f"step {step}: {what}: {ctype}: expected reason {w['reason']}, got {cond['reason']} ({cond['message']})"
            )
        if "messageContains" in w and str(w["messageContains"]) not in (cond["message"] or ""):
            fail(
                f"step {step}: {what}: {ctype}: message {cond['message']!r} does not contain {w['messageContains']!r}"
            )


def load_scenario(doc: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    if doc.get("kind") != "Scenario":
        raise ScenarioError(f"expected kind Scenario, got {doc.get('kind')!r}")
    name = (doc.get("metadata") or {}).get("name") or "scenario"
    spec = doc.get("spec") or {}
    if not isinstance(spec.get("steps"), list):
        raise ScenarioError("spec.steps must be a list")
    return str(name), spec


def run_scenario(doc: Mapping[str, Any], *, verify: bool = False) -> Report:
    """Run a scenario; with ``verify`` also re-run every recorded scheduling run from the
    scenario's own log (``replay --verify``) and report each mismatch as a failure."""
    return run_scenario_with_log(doc, verify=verify, with_log=False)[0]


def run_scenario_with_log(
    doc: Mapping[str, Any], *, verify: bool = False, with_log: bool = True
) -> tuple[Report, list[dict[str, Any]]]:
    """Run a scenario and also return the event data in order (recorded_at and the hash chain
    aside, they hold wall-clock time), for the determinism and payload tests."""
    name, spec = load_scenario(doc)
    with private_ledger() as database:
        sim = Simulation(database, spec, name)
        report = sim.run(list(spec["steps"]))
        if verify:
            rep = verify_replay(database)
            report.replay_runs = rep.runs
            for mm in rep.mismatches:
                report.failures.append(
                    f"replay --verify: mismatch at position {mm['position']}: "
                    f"recorded {mm.get('recorded')} replayed {mm.get('replayed')}"
                )
        log: list[dict[str, Any]] = []
        if with_log:
            with database.connect() as conn:
                log = log_q.payloads(conn)
        return report, log
