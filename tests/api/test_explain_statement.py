"""explain in one statement, live and ``--at`` (``ledger.queries.explain``), equals explain one
query at a time (the test oracle, ``tests/api/explain_oracle.py``), including the shadow section
(the cluster's observed bindings, which the one statement reads too), at positions before and
after the observations, for pods, pod groups and composite pod groups, and with the same error
for an object that does not exist."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from api.services import explain as explain_service
from api.services.simulate import Simulation, load_scenario
from ledger import store
from ledger.database import Database
from ledger.queries.objects import list_objects
from ledger.store import NewEvent
from ledger.uow import write
from tests.api.explain_oracle import explain_by_queries

SCENARIO = Path(__file__).parents[1] / "scenarios" / "quota-story-1-reclaim-borrowed.yaml"


def test_one_statement_equals_query_at_a_time_with_observed_bindings(database: Database) -> None:
    name, spec = load_scenario(yaml.safe_load(SCENARIO.read_text()))
    Simulation(database, spec, name).run(list(spec["steps"]))
    with database.connect() as c:
        before = store.head(c)
        pods = list_objects(c, "Pod")
    assert pods
    # a shadow ledger's observations: the cluster bound the first pods elsewhere (twice the first)
    observed = [
        NewEvent(
            f"attach/pod/{p.namespace}/{p.name}",
            "PodBindingObserved",
            {
                "pod": f"{p.namespace}/{p.name}",
                "node": f"cluster-{i}",
                "scheduler": "default-scheduler",
                "cluster": "c",
            },
        )
        for i, p in enumerate([pods[0], *pods[:3]])
    ]
    write(database, observed[:2])
    with database.connect() as c:
        middle = store.head(c)
    write(database, observed[2:])
    targets = [("Pod", p.namespace, p.name) for p in pods]
    with database.connect() as c:
        targets += [("PodGroup", r.namespace, r.name) for r in list_objects(c, "PodGroup")]
    shadows = 0
    for at in (None, before, middle, middle + 1):
        for kind, ns, obj in targets:
            try:
                new = explain_service.explain(database, kind, ns, obj, at=at)
            except LookupError:
                continue
            old = explain_by_queries(database, kind, ns, obj, at=at)
            assert new == old, (kind, obj, at)
            shadows += "shadow" in new
    assert shadows > 0


@pytest.mark.parametrize("scenario", ["tc-56-cpg-partial-preemption", "tc-19-cpg-tree-quorum"])
def test_composite_pod_groups_in_one_statement_equal_query_at_a_time(
    database: Database, scenario: str
) -> None:
    """A composite's decisions are its own stream and the root decisions whose ``group`` is the
    composite: the one statement reads both, at the head and at every position of the log."""
    path = SCENARIO.parent / f"{scenario}.yaml"
    name, spec = load_scenario(yaml.safe_load(path.read_text()))
    Simulation(database, spec, name).run(list(spec["steps"]))
    with database.connect() as c:
        head = store.head(c)
        composites = [(r.namespace, r.name) for r in list_objects(c, "CompositePodGroup")]
    assert composites
    decided = missing = 0
    for at in [None, *range(1, head + 1)]:
        for ns, obj in composites:
            try:
                new = explain_service.explain(database, "CompositePodGroup", ns, obj, at=at)
            except LookupError as e:
                with pytest.raises(LookupError) as old_error:
                    explain_by_queries(database, "CompositePodGroup", ns, obj, at=at)
                assert str(old_error.value) == str(e)
                missing += 1
                continue
            assert new == explain_by_queries(database, "CompositePodGroup", ns, obj, at=at), (obj, at)
            decided += new["attempts"] > 0
    assert decided > 0 and missing > 0
