"""Which condition decisions ``attach --mode schedule`` sends (api/attach/conditions.py
``pending``): the newest decision per group and condition, not sent yet, for groups whose tree
holds a pod naming podledger's profile (a CompositePodGroup through its PodGroups)."""

from __future__ import annotations

from typing import Any

from api.attach.conditions import ConditionWriter
from api.services.objects import load_documents
from ledger.database import Database
from ledger.resources.parse import parse_documents
from ledger.store import NewEvent
from ledger.uow import write
from tests.ledger_helpers import apply

OBJECTS = """
apiVersion: scheduling.k8s.io/v1beta1
kind: Workload
metadata: {name: wl, namespace: ns}
spec:
  compositePodGroupTemplates:
  - name: root
    schedulingPolicy: {gang: {minGroupCount: 1}}
    podGroupTemplates:
    - {name: leaf, schedulingPolicy: {gang: {minCount: 1}}}
---
apiVersion: scheduling.k8s.io/v1alpha3
kind: CompositePodGroup
metadata: {name: root, namespace: ns}
spec:
  workloadRef: {workloadName: wl, templateName: root}
  schedulingPolicy: {gang: {minGroupCount: 1}}
---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: leaf, namespace: ns}
spec:
  parentCompositePodGroupName: root
  workloadRef: {workloadName: wl, templateName: leaf}
  schedulingPolicy: {gang: {minCount: 1}}
---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: theirs, namespace: ns}
spec:
  schedulingPolicy: {gang: {minCount: 1}}
---
apiVersion: v1
kind: Pod
metadata: {name: mine, namespace: ns}
spec:
  schedulerName: podledger
  schedulingGroup: {podGroupName: leaf}
  containers: [{name: c, resources: {requests: {cpu: 1}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: other, namespace: ns}
spec:
  schedulingGroup: {podGroupName: theirs}
  containers: [{name: c, resources: {requests: {cpu: 1}}}]
"""


def _decide(database: Database, kind: str, group: str, status: str, reason: str) -> int:
    prefix = kind.lower()
    data = {
        "group": group,
        "type": f"{kind}InitiallyScheduled",
        "status": status,
        "reason": reason,
        "message": "",
    }
    ev = NewEvent(f"sched/{prefix}/{group}", f"{kind}ConditionChanged", data, {"actor": "s", "cycle": 1})
    return write(database, [ev])[0].position


def test_pending_is_the_newest_decision_of_podledgers_groups(database: Database) -> None:
    objects, errors = load_documents(parse_documents(OBJECTS, "test"))
    assert not errors, errors
    assert apply(database, objects, actor="t").ok
    old = _decide(database, "PodGroup", "ns/leaf", "False", "Unschedulable")
    leaf = _decide(database, "PodGroup", "ns/leaf", "True", "Scheduled")
    root = _decide(database, "CompositePodGroup", "ns/root", "True", "Scheduled")
    _decide(database, "PodGroup", "ns/theirs", "True", "Scheduled")
    w = ConditionWriter(database, None, "c")  # type: ignore[arg-type]
    got = {(d.position, d.kind, d.group, d.status) for d in w.pending()}
    assert got == {(leaf, "PodGroup", "ns/leaf", "True"), (root, "CompositePodGroup", "ns/root", "True")}
    assert old not in {d.position for d in w.pending()}
    # once sent (or found unchanged) a decision is not pending; a failure keeps it pending
    for pos, outcome in ((leaf, "patched"), (root, "failed")):
        data: dict[str, Any] = {
            "group": "g",
            "type": "t",
            "status": "True",
            "reason": "r",
            "cluster": "c",
            "decision_position": pos,
            "attempt": 1,
            "outcome": outcome,
        }
        write(database, [NewEvent("attach/x", "PodGroupConditionSent", data, {})])
    assert [d.position for d in w.pending()] == [root]
    # another profile: none of these groups is its
    assert ConditionWriter(database, None, "c", profile="other").pending() == []  # type: ignore[arg-type]
