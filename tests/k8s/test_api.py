"""The Kubernetes-compatible API in process (no kubectl): discovery, Status errors, tables,
patches, the status subresource, derived Events."""

from __future__ import annotations

from collections.abc import Iterator

import orjson
import pytest
from fastapi.testclient import TestClient

from api.http.app import create_app
from ledger.database import Database
from ledger.sql import scalar
from tests.http.conftest import TOKEN_SPEC, auth, count_events, demo_database, load_demo  # noqa: F401

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
AGG = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"


@pytest.fixture(scope="module")
def demo(demo_database: Database) -> Iterator[TestClient]:  # noqa: F811
    with TestClient(create_app(demo_database, TOKEN_SPEC), raise_server_exceptions=False) as c:
        yield c


@pytest.fixture()
def client(database: Database) -> Iterator[TestClient]:
    with TestClient(create_app(database, TOKEN_SPEC), raise_server_exceptions=False) as c:
        yield c


W = auth("writer")
R = auth("reader")


def test_discovery_lists_every_kind_at_its_upstream_group_version(demo: TestClient) -> None:
    assert demo.get("/version").json()["major"] == "1"
    assert demo.get("/api", headers=R).json()["versions"] == ["v1"]
    groups = {g["name"]: g for g in demo.get("/apis", headers=R).json()["groups"]}
    assert groups["scheduling.k8s.io"]["preferredVersion"]["version"] == "v1"
    assert [v["version"] for v in groups["scheduling.k8s.io"]["versions"]] == ["v1", "v1beta1", "v1alpha3"]
    assert {"policy", "scheduling.sigs.k8s.io", "events.k8s.io"} <= set(groups)
    core = {r["name"]: r for r in demo.get("/api/v1", headers=R).json()["resources"]}
    assert core["pods"]["namespaced"] and not core["nodes"]["namespaced"]
    assert (
        "pods/binding" in core
        and "pods/status" in core
        and core["namespaces"]["verbs"] == ["get", "list", "watch"]
    )
    beta = {
        r["name"]: r["kind"]
        for r in demo.get("/apis/scheduling.k8s.io/v1beta1", headers=R).json()["resources"]
    }
    assert beta["podgroups"] == "PodGroup" and beta["workloads"] == "Workload"
    # v1: the same Workload and PodGroup objects, shown at the version of the path
    ga = {r["name"]: r["kind"] for r in demo.get("/apis/scheduling.k8s.io/v1", headers=R).json()["resources"]}
    assert ga["podgroups"] == "PodGroup" and ga["workloads"] == "Workload" and ga["priorityclasses"]
    for version in ("v1", "v1beta1"):
        obj = demo.get(
            f"/apis/scheduling.k8s.io/{version}/namespaces/team-a/podgroups/giant", headers=R
        ).json()
        assert obj["apiVersion"] == f"scheduling.k8s.io/{version}" and obj["metadata"]["name"] == "giant"
    sigs = demo.get("/apis/scheduling.sigs.k8s.io/v1beta1", headers=R).json()["resources"]
    assert [r["kind"] for r in sigs] == ["ElasticQuotaTree"]
    agg = demo.get("/apis", headers={**R, "Accept": AGG})
    assert agg.headers["content-type"].startswith("application/json;g=apidiscovery.k8s.io;v=v2")
    names = {i["metadata"]["name"] for i in agg.json()["items"]}
    assert {"scheduling.k8s.io", "policy", "scheduling.sigs.k8s.io"} <= names
    root = demo.get("/openapi/v3", headers=R).json()["paths"]
    doc = demo.get(root["apis/scheduling.k8s.io/v1beta1"]["serverRelativeURL"], headers=R).json()
    patch = doc["paths"]["/apis/scheduling.k8s.io/v1beta1/namespaces/{namespace}/podgroups/{name}"]["patch"]
    assert {"name": "fieldValidation"}.items() <= patch["parameters"][2].items()
    assert patch["x-kubernetes-group-version-kind"]["kind"] == "PodGroup"


def test_errors_are_status_objects(demo: TestClient) -> None:
    r = demo.get("/api/v1/pods")
    assert r.status_code == 401 and r.json()["kind"] == "Status" and r.json()["reason"] == "Unauthorized"
    r = demo.get("/api/v1/namespaces/team-a/pods/nope", headers=R)
    body = r.json()
    assert (
        r.status_code == 404 and body["reason"] == "NotFound" and body["message"] == 'pods "nope" not found'
    )
    assert body["details"] == {"kind": "pods", "name": "nope"}
    r = demo.get("/apis/scheduling.k8s.io/v1beta1/namespaces/team-a/podgroups/nope", headers=R)
    assert r.json()["message"] == 'podgroups.scheduling.k8s.io "nope" not found'
    assert demo.get("/api/v1/widgets", headers=R).status_code == 404
    assert demo.get("/apis/nope.io/v1", headers=R).status_code == 404
    r = demo.post("/api/v1/namespaces/team-a/pods", headers=R, json={})
    assert r.status_code == 403 and r.json()["reason"] == "Forbidden"
    r = demo.patch(
        "/api/v1/namespaces/team-a/pods/giant-0",
        headers={**W, "Content-Type": "application/xml"},
        content=b"[]",
    )
    assert r.status_code == 415 and r.json()["reason"] == "UnsupportedMediaType"


def test_podgroup_table_shows_min_count_scheduled_reason_and_age(demo: TestClient) -> None:
    r = demo.get("/apis/scheduling.k8s.io/v1beta1/podgroups", headers={**R, "Accept": TABLE})
    t = r.json()
    assert t["kind"] == "Table"
    assert [c["name"] for c in t["columnDefinitions"]] == ["Name", "MinCount", "Scheduled", "Status", "Age"]
    rows = {row["object"]["metadata"]["name"]: row["cells"] for row in t["rows"]}
    assert rows["llm-pretrain"][1:4] == [4, "4/4", "Scheduled"]
    assert rows["giant"][1:4] == [3, "0/3", "Unschedulable"]
    pods = demo.get("/api/v1/namespaces/team-a/pods", headers={**R, "Accept": TABLE}).json()
    node = pods["columnDefinitions"].index(next(c for c in pods["columnDefinitions"] if c["name"] == "Node"))
    cells = {row["cells"][0]: row["cells"] for row in pods["rows"]}
    assert cells["llm-pretrain-0"][node].startswith("node-") and cells["giant-0"][node] == "<none>"
    assert cells["giant-0"][2] == "Pending"


def test_events_explain_a_pending_gang(demo: TestClient, demo_database: Database) -> None:  # noqa: F811
    uid = demo.get("/apis/scheduling.k8s.io/v1beta1/namespaces/team-a/podgroups/giant", headers=R).json()[
        "metadata"
    ]["uid"]
    sel = (
        "involvedObject.kind=PodGroup,involvedObject.name=giant,involvedObject.namespace=team-a,involvedObject.uid="
        + uid
    )
    evs = demo.get("/api/v1/namespaces/team-a/events", headers=R, params={"fieldSelector": sel}).json()[
        "items"
    ]
    # upstream's FailedScheduling, and podledger's one-line diagnosis beside it (issue 31)
    assert [(e["type"], e["reason"]) for e in evs] == [
        ("Warning", "FailedScheduling"),
        ("Warning", "Diagnosis"),
    ]
    with demo_database.connect() as c:
        msg, summary = c.execute(
            "SELECT data->>'message', data->>'summary' FROM events WHERE type = 'PodGroupUnschedulable' "
            "AND data->>'group' = 'team-a/giant'",
        ).fetchone()
    assert evs[0]["message"] == msg
    assert summary.startswith("fits only 0 of ") and evs[1]["message"] == f"podledger: {summary}"
    v1 = demo.get("/apis/events.k8s.io/v1/namespaces/team-a/events", headers=R).json()["items"]
    assert any(e["reason"] == "Scheduled" and e["regarding"]["name"] == "llm-pretrain-0" for e in v1)
    pod = demo.get("/api/v1/namespaces/team-a/pods/llm-pretrain-0", headers=R).json()
    # upstream's status with no kubelet: Pending + PodScheduled=True, podledger's phase annotated
    assert pod["spec"]["nodeName"] and "nodeName" not in pod["status"]
    assert (
        pod["status"]["phase"] == "Pending"
        and pod["metadata"]["annotations"]["podledger.io/phase"] == "Bound"
    )
    assert any(c["type"] == "PodScheduled" and c["status"] == "True" for c in pod["status"]["conditions"])
    ns = [n["metadata"]["name"] for n in demo.get("/api/v1/namespaces", headers=R).json()["items"]]
    assert ns == ["default", "team-a", "team-b"]


def test_apply_patch_records_the_field_manager_and_merge_patch_keeps_the_rest(
    client: TestClient, database: Database
) -> None:
    doc = b"apiVersion: v1\nkind: Node\nmetadata: {name: n1, labels: {a: x}}\nstatus: {allocatable: {cpu: '4', memory: 8Gi}}\n"
    r = client.patch(
        "/api/v1/nodes/n1?fieldManager=my-tool&force=true",
        headers={**W, "Content-Type": "application/apply-patch+yaml"},
        content=doc,
    )
    assert r.status_code == 201, r.text
    assert r.json()["status"]["allocatable"] == {"cpu": "4", "memory": "8Gi"}
    with database.connect() as c:
        meta = scalar(c, "SELECT meta FROM events ORDER BY position DESC LIMIT 1")
    assert meta["fieldManager"] == "my-tool" and meta["operation"] == "Apply" and meta["actor"] == "writer"

    r = client.patch(
        "/api/v1/nodes/n1",
        headers={**W, "Content-Type": "application/merge-patch+json"},
        content=orjson.dumps({"metadata": {"labels": {"b": "y"}}}),
    )
    assert r.status_code == 200
    node = r.json()
    assert node["metadata"]["labels"] == {"a": "x", "b": "y"} and node["status"]["allocatable"]["cpu"] == "4"

    # the status subresource changes only the status
    node["status"]["allocatable"]["cpu"] = "6"
    node["metadata"]["labels"] = {"ignored": "yes"}
    r = client.put("/api/v1/nodes/n1/status", headers=W, content=orjson.dumps(node))
    assert r.status_code == 200, r.text
    assert r.json()["status"]["allocatable"]["cpu"] == "6" and r.json()["metadata"]["labels"] == {
        "a": "x",
        "b": "y",
    }

    # apply without a field manager is a 400, appending nothing
    before = count_events(database)
    r = client.patch(
        "/api/v1/nodes/n1", headers={**W, "Content-Type": "application/apply-patch+yaml"}, content=doc
    )
    assert r.status_code == 400 and r.json()["reason"] == "BadRequest"
    # a delete with a stale precondition conflicts; with the right one it deletes
    rv = client.get("/api/v1/nodes/n1", headers=R).json()["metadata"]["resourceVersion"]
    stale = {"preconditions": {"resourceVersion": str(int(rv) - 1)}}
    r = client.request("DELETE", "/api/v1/nodes/n1", headers=W, content=orjson.dumps(stale))
    assert r.status_code == 409 and count_events(database) == before
    r = client.request(
        "DELETE",
        "/api/v1/nodes/n1",
        headers=W,
        content=orjson.dumps({"preconditions": {"resourceVersion": rv}}),
    )
    assert r.status_code == 200 and r.json()["metadata"]["name"] == "n1"
    assert client.get("/api/v1/nodes/n1", headers=R).status_code == 404


def test_bad_input_is_a_4xx_status_and_appends_nothing(client: TestClient, database: Database) -> None:
    load_demo(database)
    before = count_events(database)
    bad = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "x"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]},
    }
    r = client.post("/api/v1/namespaces/team-a/pods", headers=W, json=bad)
    assert r.status_code == 422 and r.json()["reason"] == "Invalid"
    assert r.json()["details"]["causes"][0]["field"] == "spec.containers[0].resources.requests[cpu]"
    assert r.json()["message"].startswith('Pod "x" is invalid') and r.json()["details"]["kind"] == "Pod"
    r = client.post(
        "/api/v1/namespaces/team-b/pods",
        headers=W,
        json={**bad, "metadata": {"name": "x", "namespace": "team-a"}},
    )
    assert r.status_code == 400
    r = client.post("/api/v1/namespaces/team-a/pods", headers=W, content=b"{not json")
    assert r.status_code == 400
    r = client.post(
        "/apis/policy/v1/namespaces/team-a/poddisruptionbudgets",
        headers=W,
        json={"kind": "Pod", "metadata": {"name": "p"}},
    )
    assert r.status_code == 400
    assert count_events(database) == before


def _watch(client: TestClient, path: str, **params: str) -> list[dict]:  # type: ignore[type-arg]
    r = client.get(path, headers=R, params={"watch": "1", "timeoutSeconds": "1", **params})
    assert r.status_code == 200, r.text
    return [orjson.loads(line) for line in r.text.splitlines() if line.strip()]


def test_watch_follows_selectors_and_tables(client: TestClient, database: Database) -> None:
    def pod(name: str, app: str) -> dict:  # type: ignore[type-arg]
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": app}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
        }

    # one event first: resourceVersion 0 would mean "any" (the current objects), as upstream
    assert client.post("/api/v1/namespaces/ns-other/pods", headers=W, json=pod("o", "x")).status_code == 201
    start = client.get("/api/v1/namespaces/ns-w/pods", headers=R).json()["metadata"]["resourceVersion"]
    assert start != "0"
    assert client.post("/api/v1/namespaces/ns-w/pods", headers=W, json=pod("a", "web")).status_code == 201
    assert client.post("/api/v1/namespaces/ns-w/pods", headers=W, json=pod("b", "db")).status_code == 201
    r = client.patch(
        "/api/v1/namespaces/ns-w/pods/a",
        headers={**W, "Content-Type": "application/merge-patch+json"},
        content=orjson.dumps({"metadata": {"labels": {"app": "db"}}}),
    )
    assert r.status_code == 200
    assert client.request("DELETE", "/api/v1/namespaces/ns-w/pods/b", headers=W).status_code == 200
    with database.connect() as c:
        positions = [
            int(p)
            for (p,) in c.execute(
                "SELECT position FROM events WHERE position > %(s)s ORDER BY position", {"s": int(start)}
            )
        ]

    everything = _watch(client, "/api/v1/namespaces/ns-w/pods", resourceVersion=start)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in everything] == [
        ("ADDED", "a"),
        ("ADDED", "b"),
        ("MODIFIED", "a"),
        ("DELETED", "b"),
    ]
    assert [int(e["object"]["metadata"]["resourceVersion"]) for e in everything] == positions
    web = _watch(client, "/api/v1/namespaces/ns-w/pods", resourceVersion=start, labelSelector="app=web")
    # a leaves the selection when relabelled: DELETED for this watch
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in web] == [("ADDED", "a"), ("DELETED", "a")]
    # resuming from the middle repeats nothing
    tail = _watch(client, "/api/v1/namespaces/ns-w/pods", resourceVersion=str(positions[1]))
    assert tail == everything[2:]
    # without a resourceVersion: the current objects first
    now = _watch(client, "/api/v1/namespaces/ns-w/pods")
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in now] == [("ADDED", "a")]
    # a Table watch (kubectl get -w): one row per event, columns on the first only
    tables = client.get(
        "/api/v1/namespaces/ns-w/pods",
        headers={**R, "Accept": TABLE},
        params={"watch": "1", "timeoutSeconds": "1", "resourceVersion": start},
    ).text.splitlines()
    objs = [orjson.loads(t)["object"] for t in tables]
    assert all(o["kind"] == "Table" and len(o["rows"]) == 1 for o in objs)
    assert objs[0]["columnDefinitions"] and not objs[1]["columnDefinitions"]
    assert [o["rows"][0]["cells"][0] for o in objs] == ["a", "b", "a", "b"]
