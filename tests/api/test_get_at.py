"""``get --at`` reads the temporal projection directly (``ledger.queries.state.list_objects_at``):
at several positions of a few scenarios, its rows equal the full fold from position 0, whole
(``-o json/yaml``) and lean (the table: what each row shows and how the selectors judge it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from api.cli.objects import _detail, _selected, _status_of
from api.k8s.objects import parse_field_selector, parse_label_selector
from api.services.simulate import Simulation, load_scenario
from ledger import db, store
from ledger.database import Database
from ledger.projections.current import project
from ledger.queries.objects import list_objects
from ledger.queries.state import list_objects_at
from tests.api.test_cli import cli

SCENARIOS = Path(__file__).parents[1] / "scenarios"
PICKED = (
    "quota-story-1-reclaim-borrowed",  # quotas, preemption
    "tc-14-gated-member-gates-gang",  # gated pods, groups
    "tc-19-cpg-tree-quorum",  # composite groups
)
KINDS = ("Pod", "PodGroup", "CompositePodGroup", "Node", "ElasticQuota")
SELECTORS = (
    ([], []),
    ([], parse_field_selector("status.phase=Bound")),
    ([], parse_field_selector("spec.nodeName!=")),
    (parse_label_selector("app"), []),
)


def _view(kind: str, r: object) -> tuple[object, ...]:
    """What a ``get`` table row shows, and which selectors keep it."""
    return (
        r.namespace,  # type: ignore[attr-defined]
        r.name,  # type: ignore[attr-defined]
        r.created_at,  # type: ignore[attr-defined]
        r.updated_position,  # type: ignore[attr-defined]
        _status_of(kind, r),
        _detail(kind, r),
        tuple(_selected(r, labels, fields) for labels, fields in SELECTORS),
    )


@pytest.mark.parametrize("scenario", PICKED)
def test_get_at_equals_full_fold(database: Database, db_url: str, scenario: str) -> None:
    name, spec = load_scenario(yaml.safe_load((SCENARIOS / f"{scenario}.yaml").read_text()))
    Simulation(database, spec, name).run(list(spec["steps"]))
    events = list(store.iter_all(database))
    head = events[-1].position
    positions = sorted({1, head // 4, head // 3, head // 2, (3 * head) // 4, head - 1, head, head + 10})
    checked = 0
    owner = db.get_database(db_url, migrate_on_start=False, owner=True)  # TEMP is the owner's only
    with owner.transaction() as fold, database.connect() as conn:  # fold: rolled back below
        fold.execute("CREATE TEMP TABLE objects (LIKE public.objects INCLUDING ALL)")
        i = 0
        for p in positions:
            batch = []
            while i < len(events) and events[i].position <= p:
                batch.append(events[i])
                i += 1
            if batch:
                project(fold, batch, temporal=False)
            for kind in KINDS:
                for ns in (None, "default"):
                    want = list_objects(fold, kind, ns)
                    assert list_objects_at(conn, p, kind, ns, lean=False) == want, (scenario, p, kind, ns)
                    lean = list_objects_at(conn, p, kind, ns)
                    assert [_view(kind, r) for r in lean] == [_view(kind, r) for r in want], (p, kind)
                    checked += len(want)
                    for r in want[:2]:  # one object by name
                        assert list_objects_at(conn, p, kind, r.namespace, r.name, lean=False) == [r]
        fold.rollback()
    assert checked > 0


def test_get_at_cli_table(database: Database) -> None:
    """The command prints the lean rows' table, and whole objects with -o json."""
    name, spec = load_scenario(yaml.safe_load((SCENARIOS / f"{PICKED[0]}.yaml").read_text()))
    Simulation(database, spec, name).run(list(spec["steps"]))
    with database.connect() as c:
        head = store.head(c)
        pods = list_objects_at(c, head - 1, "Pod", lean=False)
    assert pods
    res = cli("get", "pods", "-A", "--at", str(head - 1), "-o", "wide")
    assert res.returncode == 0, res.stderr
    for r in pods:
        status, node = _status_of("Pod", r)
        line = next(ln for ln in res.stdout.splitlines() if f" {r.name} " in ln)
        assert status in line and node in line and _detail("Pod", r) in line
    res = cli("get", "pods", "-A", "--at", str(head - 1), "-o", "json")
    assert res.returncode == 0, res.stderr
    items = json.loads(res.stdout)["items"]
    assert [i["metadata"]["name"] for i in items] == [r.name for r in pods]
    assert all("containers" in i["spec"] for i in items)
