"""The scheduler bridge's per-pod memory follows the live pods, not every pod the log ever held
(a long-running worker, or bench.audit's build of 1M events, creates and deletes pods for
hours), and a bridge rebuilt from the log holds the same."""

from __future__ import annotations

from api.services.objects import load_documents
from api.services.replay import verify_replay
from ledger.database import Database
from ledger.resources.parse import Document
from scheduler.edge.bridge import Bridge, from_ts
from tests.ledger.manifests import pod
from tests.ledger_helpers import apply, delete

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z

NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1"},
    "status": {"allocatable": {"cpu": "64", "memory": "64Gi", "pods": "100"}},
}


def _apply(database: Database, raws: list[dict], at: float) -> None:
    objs, errors = load_documents([Document(index=i + 1, source="test", raw=r) for i, r in enumerate(raws)])
    assert not errors, errors
    assert apply(database, objs, effective_at=from_ts(at)).ok


def test_deleted_pods_leave_no_requests_behind(database: Database) -> None:
    _apply(database, [NODE], T0)
    bridge = Bridge(database, actor="test")
    for r in range(1, 7):
        at = T0 + 10 * r
        if r > 2:  # pods live two rounds
            gone = [("Pod", "ns", f"p{r - 2}-{i}") for i in range(3)]
            delete(database, gone, effective_at=from_ts(at))
        _apply(database, [pod(f"p{r}-{i}") for i in range(3)], at)
        results = bridge.run_until_idle(at)
        assert [x.result for x in results] == ["scheduled"] * 3
    live = {f"ns/p{r}-{i}" for r in (5, 6) for i in range(3)}
    assert set(bridge._requests) == live
    rebuilt = Bridge(database, actor="test")
    rebuilt.catch_up()
    assert rebuilt._requests == bridge._requests
    # the binds still carry each pod's requests, and every decision replays
    rep = verify_replay(database)
    assert rep.ok, rep.mismatches
