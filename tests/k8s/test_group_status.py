"""The status subresource of PodGroup and CompositePodGroup: a condition written by a client
(PUT, merge patch, strategic merge patch) is recorded as an observed ``*ConditionChanged`` event
and shown on GET; a bad body is a 422 naming the field and appends nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient

from api.http.app import create_app
from api.services.replay import verify_replay
from ledger.database import Database
from ledger.sql import rows
from tests.http.conftest import TOKEN_SPEC, auth, count_events

W, R = auth("writer"), auth("reader")
PG = "/apis/scheduling.k8s.io/v1beta1/namespaces/team-s/podgroups"
CPG = "/apis/scheduling.k8s.io/v1alpha3/namespaces/team-s/compositepodgroups"
SMP = {**W, "Content-Type": "application/strategic-merge-patch+json"}
MERGE = {**W, "Content-Type": "application/merge-patch+json"}


@pytest.fixture()
def client(database: Database) -> Iterator[TestClient]:
    with TestClient(create_app(database, TOKEN_SPEC), raise_server_exceptions=False) as c:
        for path, obj in (
            (
                "/apis/scheduling.k8s.io/v1beta1/namespaces/team-s/workloads",
                {
                    "apiVersion": "scheduling.k8s.io/v1beta1",
                    "kind": "Workload",
                    "metadata": {"name": "wl"},
                    "spec": {
                        "compositePodGroupTemplates": [
                            {
                                "name": "t",
                                "schedulingPolicy": {"gang": {"minGroupCount": 1}},
                                "podGroupTemplates": [
                                    {"name": "leaf", "schedulingPolicy": {"gang": {"minCount": 1}}}
                                ],
                            }
                        ]
                    },
                },
            ),
            (
                PG,
                {
                    "apiVersion": "scheduling.k8s.io/v1beta1",
                    "kind": "PodGroup",
                    "metadata": {"name": "g"},
                    "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
                },
            ),
        ):
            r = c.post(path, headers=W, json=obj)
            assert r.status_code == 201, r.text
        yield c


def cond(ctype: str, status: str, reason: str, message: str = "") -> dict[str, Any]:
    return {
        "type": ctype,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": "2026-12-04T10:00:00Z",
    }


def conditions(client: TestClient, path: str) -> dict[str, tuple[str, str, str]]:
    r = client.get(path, headers=R)
    assert r.status_code == 200, r.text
    return {
        c["type"]: (c["status"], c["reason"], c["message"])
        for c in (r.json().get("status") or {}).get("conditions") or []
    }


def observed(database: Database) -> list[Any]:
    with database.connect() as c:
        return rows(
            c,
            "SELECT type, stream, data, meta FROM events WHERE type LIKE '%ConditionChanged' ORDER BY position",
        )


def test_put_and_patch_record_observed_conditions(client: TestClient, database: Database) -> None:
    obj = client.get(f"{PG}/g", headers=R).json()
    obj["status"] = {"conditions": [cond("PodGroupInitiallyScheduled", "False", "Unschedulable", "wait")]}
    obj["spec"]["schedulingPolicy"]["gang"]["minCount"] = 9  # a status write leaves the spec alone
    r = client.put(f"{PG}/g/status", headers=W, content=orjson.dumps(obj))
    assert r.status_code == 200, r.text
    assert r.json()["spec"]["schedulingPolicy"]["gang"]["minCount"] == 2
    assert r.json()["status"]["conditions"][0]["reason"] == "Unschedulable"
    rv = r.json()["metadata"]["resourceVersion"]

    # strategic merge: conditions merge by type; the same condition again appends nothing
    patch = {"status": {"conditions": [cond("PodGroupInitiallyScheduled", "True", "Scheduled")]}}
    r = client.patch(f"{PG}/g/status", headers=SMP, content=orjson.dumps(patch))
    assert r.status_code == 200, r.text
    assert int(r.json()["metadata"]["resourceVersion"]) > int(rv)
    before = count_events(database)
    assert client.patch(f"{PG}/g/status", headers=SMP, content=orjson.dumps(patch)).status_code == 200
    assert count_events(database) == before
    extra = {"status": {"conditions": [cond("example.com/Ready", "True", "Checked", "ok")]}}
    assert client.patch(f"{PG}/g/status", headers=SMP, content=orjson.dumps(extra)).status_code == 200
    assert conditions(client, f"{PG}/g") == {
        "PodGroupInitiallyScheduled": ("True", "Scheduled", ""),
        "example.com/Ready": ("True", "Checked", "ok"),
    }
    # a merge patch replaces the list: leaving a condition out would remove it, which is refused
    r = client.patch(f"{PG}/g/status", headers=MERGE, content=orjson.dumps(extra))
    assert r.status_code == 422 and r.json()["details"]["causes"][0]["field"] == "status.conditions"
    # with both conditions, it changes the message of one
    both = {
        "status": {
            "conditions": [
                cond("PodGroupInitiallyScheduled", "True", "Scheduled"),
                cond("example.com/Ready", "True", "Checked", "still ok"),
            ]
        }
    }
    assert client.patch(f"{PG}/g/status", headers=MERGE, content=orjson.dumps(both)).status_code == 200

    rows = observed(database)
    assert [(r[0], r[2]["type"], r[2]["status"], r[2]["message"]) for r in rows] == [
        ("PodGroupConditionChanged", "PodGroupInitiallyScheduled", "False", "wait"),
        ("PodGroupConditionChanged", "PodGroupInitiallyScheduled", "True", ""),
        ("PodGroupConditionChanged", "example.com/Ready", "True", "ok"),
        ("PodGroupConditionChanged", "example.com/Ready", "True", "still ok"),
    ]
    for _typ, stream, data, meta in rows:
        assert stream == "sched/podgroup/team-s/g" and data["group"] == "team-s/g"
        assert meta["observed"] is True and meta["actor"] == "writer" and "cycle" not in meta
        assert meta["subresource"] == "status" and meta["via"] == "k8s"
    # the log with observed conditions still replays: they are inputs, not decisions
    assert verify_replay(database).ok


def test_composite_pod_group_status(client: TestClient, database: Database) -> None:
    cpg = {
        "apiVersion": "scheduling.k8s.io/v1alpha3",
        "kind": "CompositePodGroup",
        "metadata": {"name": "c"},
        "spec": {
            "workloadRef": {"workloadName": "wl", "templateName": "t"},
            "schedulingPolicy": {"gang": {"minGroupCount": 1}},
        },
    }
    r = client.post(CPG, headers=W, json=cpg)
    assert r.status_code == 201, r.text
    patch = {"status": {"conditions": [cond("CompositePodGroupInitiallyScheduled", "True", "Scheduled")]}}
    r = client.patch(f"{CPG}/c/status", headers=SMP, content=orjson.dumps(patch))
    assert r.status_code == 200, r.text
    assert conditions(client, f"{CPG}/c") == {
        "CompositePodGroupInitiallyScheduled": ("True", "Scheduled", "")
    }
    assert [(r[0], r[1]) for r in observed(database)] == [
        ("CompositePodGroupConditionChanged", "sched/compositepodgroup/team-s/c")
    ]


@pytest.mark.parametrize(
    ("condition", "field"),
    [
        (
            {**cond("PodGroupInitiallyScheduled", "True", "Scheduled"), "status": "Yes"},
            "status.conditions[0].status",
        ),
        ({**cond("PodGroupInitiallyScheduled", "True", "")}, "status.conditions[0].reason"),
        ({**cond("PodGroupInitiallyScheduled", "True", "not a reason!")}, "status.conditions[0].reason"),
        (
            {**cond("PodGroupInitiallyScheduled", "True", "Scheduled"), "lastTransitionTime": None},
            "status.conditions[0].lastTransitionTime",
        ),
        ({**cond("bad type!", "True", "Scheduled")}, "status.conditions[0].type"),
        (
            {**cond("PodGroupInitiallyScheduled", "True", "Scheduled"), "observedGeneration": -1},
            "status.conditions[0].observedGeneration",
        ),
        ("not an object", "status.conditions[0]"),
    ],
)
def test_a_bad_condition_is_a_422_naming_the_field(
    client: TestClient, database: Database, condition: Any, field: str
) -> None:
    before = count_events(database)
    body = {"status": {"conditions": [condition]}}
    r = client.patch(f"{PG}/g/status", headers=MERGE, content=orjson.dumps(body))
    assert r.status_code == 422, r.text
    assert r.json()["reason"] == "Invalid" and r.json()["details"]["causes"][0]["field"] == field
    assert field in r.json()["message"]
    assert count_events(database) == before


def test_refusals(client: TestClient, database: Database) -> None:
    before = count_events(database)
    body = orjson.dumps({"status": {"conditions": [cond("PodGroupInitiallyScheduled", "True", "Scheduled")]}})
    # a reader may not write the status subresource
    r = client.patch(
        f"{PG}/g/status", headers={**R, "Content-Type": "application/merge-patch+json"}, content=body
    )
    assert r.status_code == 403 and "podgroups/status" in r.json()["message"]
    # duplicates, resource claim statuses, a missing object, a stale resourceVersion
    dup = {"status": {"conditions": [cond("A", "True", "X"), cond("A", "False", "Y")]}}
    r = client.patch(f"{PG}/g/status", headers=MERGE, content=orjson.dumps(dup))
    assert r.status_code == 422 and r.json()["details"]["causes"][0]["field"] == "status.conditions[1].type"
    claims = {"status": {"resourceClaimStatuses": [{"name": "x"}]}}
    r = client.patch(f"{PG}/g/status", headers=MERGE, content=orjson.dumps(claims))
    assert (
        r.status_code == 422 and r.json()["details"]["causes"][0]["field"] == "status.resourceClaimStatuses"
    )
    assert client.patch(f"{PG}/nope/status", headers=MERGE, content=body).status_code == 404
    stale = {"metadata": {"resourceVersion": "1"}, "status": {"conditions": []}}
    assert client.patch(f"{PG}/g/status", headers=MERGE, content=orjson.dumps(stale)).status_code == 409
    r = client.patch(f"{PG}/g/status", headers={**W, "Content-Type": "text/plain"}, content=body)
    assert r.status_code == 415
    assert client.request("DELETE", f"{PG}/g/status", headers=W).status_code == 404
    assert count_events(database) == before


def test_composite_pod_group_is_served_at_v1beta1_and_v1alpha3(client: TestClient) -> None:
    """CompositePodGroup at upstream master's v1beta1 (KEP-6012 beta) and at 1.37's v1alpha3:
    the same object through both paths, shown at the version of the path."""
    beta = "/apis/scheduling.k8s.io/v1beta1/namespaces/team-s/compositepodgroups"
    obj = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "CompositePodGroup",
        "metadata": {"name": "beta"},
        "spec": {
            "workloadRef": {"workloadName": "wl", "templateName": "t"},
            "schedulingPolicy": {"gang": {"minGroupCount": 1}},
        },
    }
    r = client.post(beta, headers=W, json=obj)
    assert r.status_code == 201, r.text
    for path, version in ((beta, "v1beta1"), (CPG, "v1alpha3")):
        got = client.get(f"{path}/beta", headers=R)
        assert got.status_code == 200, got.text
        assert got.json()["apiVersion"] == f"scheduling.k8s.io/{version}"
        assert got.json()["spec"]["schedulingPolicy"] == {"gang": {"minGroupCount": 1}}
    listed = client.get(beta, headers=R).json()
    assert [i["metadata"]["name"] for i in listed["items"]] == ["beta"]
