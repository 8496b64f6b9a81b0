"""explain in one statement, live and ``--at`` (``ledger.queries.explain``), equals explain one
query at a time, including the shadow section (the cluster's observed bindings, which the one
statement reads too) and at positions before and after the observations."""

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

SCENARIO = Path(__file__).parents[1] / "scenarios" / "quota-story-1-reclaim-borrowed.yaml"


def test_one_statement_equals_query_at_a_time_with_observed_bindings(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
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
            with monkeypatch.context() as mp:
                mp.setattr(explain_service, "LIVE_ONE_STATEMENT", False)
                mp.setattr(explain_service, "AT_ONE_STATEMENT", False)
                old = explain_service.explain(database, kind, ns, obj, at=at)
            assert new == old, (kind, obj, at)
            shadows += "shadow" in new
    assert shadows > 0
