"""Nothing wrong enters the log (issue 32, issue 37 item 4): dry runs on every write verb,
fieldValidation Strict/Warn/Ignore with upstream's texts, malformed bodies and query parameters
refused with a Status (never a 500), and the event count unchanged after each of them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient

from api.http.app import create_app
from ledger.database import Database
from tests.http.conftest import TOKEN_SPEC, auth, count_events

W = {**auth("writer"), "Content-Type": "application/json"}
PODS = "/api/v1/namespaces/dry/pods"
NODES = "/api/v1/nodes"

NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1"},
    "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
}


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "dry"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}], **spec},
    }


@pytest.fixture()
def api(database: Database) -> Iterator[TestClient]:
    with TestClient(create_app(database, TOKEN_SPEC), raise_server_exceptions=False) as c:
        assert c.post(NODES, headers=W, content=orjson.dumps(NODE)).status_code == 201
        assert c.post(PODS, headers=W, content=orjson.dumps(pod("p1"))).status_code == 201
        yield c


def _same_log(database: Database, before: int) -> None:
    assert count_events(database) == before, "the request left a trace in the log"


def test_dry_run_of_every_write_verb_answers_what_would_be_stored_and_appends_nothing(
    api: TestClient, database: Database
) -> None:
    before = count_events(database)
    dry = {"dryRun": "All"}
    r = api.post(PODS, headers=W, params=dry, content=orjson.dumps(pod("p2")))
    assert r.status_code == 201, r.text
    assert r.json()["metadata"]["name"] == "p2" and "resourceVersion" not in r.json()["metadata"]
    assert r.json()["metadata"]["uid"]
    live = api.get(f"{PODS}/p1", headers=W).json()
    rv = live["metadata"]["resourceVersion"]
    changed = {**live, "metadata": {**live["metadata"], "labels": {"tier": "x"}}}
    r = api.put(f"{PODS}/p1", headers=W, params=dry, content=orjson.dumps(changed))
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["labels"] == {"tier": "x"} and r.json()["metadata"]["resourceVersion"] == rv
    for ctype, body in (
        ("application/merge-patch+json", {"metadata": {"labels": {"a": "b"}}}),
        ("application/strategic-merge-patch+json", {"metadata": {"labels": {"a": "b"}}}),
    ):
        r = api.patch(
            f"{PODS}/p1", headers={**W, "Content-Type": ctype}, params=dry, content=orjson.dumps(body)
        )
        assert r.status_code == 200 and r.json()["metadata"]["labels"] == {"a": "b"}, r.text
    r = api.patch(
        f"{PODS}/p3",
        headers={**W, "Content-Type": "application/apply-patch+yaml"},
        params={**dry, "fieldManager": "kubectl"},
        content=orjson.dumps(pod("p3")),
    )
    assert r.status_code == 201, r.text
    r = api.delete(f"{PODS}/p1", headers=W, params=dry)
    assert r.status_code == 200 and r.json()["metadata"]["name"] == "p1", r.text
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p1"}, "target": {"name": "n1"}}
    r = api.post(f"{PODS}/p1/binding", headers=W, params=dry, content=orjson.dumps(binding))
    assert r.status_code == 201, r.text
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p1"}}
    r = api.post(f"{PODS}/p1/eviction", headers=W, params=dry, content=orjson.dumps(eviction))
    assert r.status_code == 201, r.text
    in_body = {**eviction, "deleteOptions": {"dryRun": ["All"]}}
    assert api.post(f"{PODS}/p1/eviction", headers=W, content=orjson.dumps(in_body)).status_code == 201
    node = api.get(f"{NODES}/n1", headers=W).json()
    node["status"]["allocatable"]["cpu"] = "4"
    assert api.put(f"{NODES}/n1/status", headers=W, params=dry, content=orjson.dumps(node)).status_code == 200
    _same_log(database, before)
    assert api.get(f"{PODS}/p1", headers=W).json()["metadata"]["resourceVersion"] == rv
    assert api.get(f"{PODS}/p2", headers=W).status_code == 404
    # an admission refusal in a dry run records nothing either (not even AdmissionRejected)
    r = api.post(PODS, headers=W, params=dry, content=orjson.dumps(pod("p4", priorityClassName="nope")))
    assert r.status_code == 422, r.text
    _same_log(database, before)


def test_dry_run_values_other_than_all_are_refused_as_upstream(api: TestClient, database: Database) -> None:
    before = count_events(database)
    r = api.post(PODS, headers=W, params={"dryRun": "Maybe"}, content=orjson.dumps(pod("p5")))
    assert r.status_code == 422
    assert r.json()["message"] == (
        'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"Maybe"}: '
        'supported values: "All"'
    )
    _same_log(database, before)


def test_the_json_api_dry_run_answers_the_events_it_would_append(api: TestClient, database: Database) -> None:
    before = count_events(database)
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: j1, namespace: dry}\nspec:\n  containers: [{name: c}]\n"
    )
    r = api.post(
        "/podledger/v1/apply",
        params={"dryRun": "true"},
        headers={**auth("writer"), "Content-Type": "application/yaml"},
        content=text,
    )
    assert r.status_code == 200, r.text
    assert r.json()["dryRun"] is True and r.json()["events"][0]["type"] == "PodCreated"
    r = api.delete("/podledger/v1/pod/dry/p1", params={"dryRun": "true"}, headers=auth("writer"))
    assert r.status_code == 200 and r.json()["dryRun"] is True, r.text
    _same_log(database, before)
    assert api.get("/podledger/v1/pod/dry/p1", headers=auth("writer")).status_code == 200


def test_strict_field_validation_refuses_unknown_and_duplicate_fields_with_upstreams_text(
    api: TestClient, database: Database
) -> None:
    before = count_events(database)
    bad = pod("typo")
    bad["spec"]["containers"][0]["resource"] = {"requests": {"nvidia.com/gpu": "1"}}
    r = api.post(PODS, headers=W, params={"fieldValidation": "Strict"}, content=orjson.dumps(bad))
    assert r.status_code == 400
    assert r.json()["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
        'unknown field "spec.containers[0].resource"'
    )
    dup = b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"d","name":"d2","namespace":"dry"},"spec":{"containers":[{"name":"c"}]}}'
    r = api.post(PODS, headers=W, params={"fieldValidation": "Strict"}, content=dup)
    assert r.status_code == 400 and r.json()["message"].endswith(
        'strict decoding error: duplicate field "metadata.name"'
    )
    r = api.post(PODS, headers=W, params={"fieldValidation": "Bogus"}, content=orjson.dumps(bad))
    assert r.status_code == 422 and "fieldValidation: Unsupported value" in r.json()["message"]
    # upstream fields podledger does not model are known, not unknown
    ok = pod("known", restartPolicy="Never")
    ok["spec"]["containers"][0].update(
        {"image": "busybox", "command": ["sh"], "env": [{"name": "A", "value": "1"}]}
    )
    assert (
        api.post(
            PODS, headers=W, params={"fieldValidation": "Strict", "dryRun": "All"}, content=orjson.dumps(ok)
        ).status_code
        == 201
    )
    _same_log(database, before)
    r = api.post(PODS, headers=W, params={"fieldValidation": "Warn"}, content=orjson.dumps(bad))
    assert r.status_code == 201
    assert r.headers.get_list("Warning") == ['299 - "unknown field \\"spec.containers[0].resource\\""']
    r = api.post(
        PODS,
        headers=W,
        params={"fieldValidation": "Ignore"},
        content=orjson.dumps({**bad, "metadata": {"name": "typo2", "namespace": "dry"}}),
    )
    assert r.status_code == 201 and "Warning" not in r.headers


BAD_BODIES = [
    ("POST", PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": 5}),
    ("POST", PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": 7}}),
    ("POST", f"{PODS}/p1/binding", {"kind": "Binding", "metadata": {"name": "p1"}, "target": 5}),
    ("POST", f"{PODS}/p1/binding", {"kind": "Binding", "metadata": {"name": "p1"}, "target": {"name": 5}}),
    ("DELETE", f"{PODS}/p1", {"kind": "DeleteOptions", "preconditions": 5}),
    ("DELETE", f"{PODS}/p1", [1, 2]),
    ("POST", f"{PODS}/p1/eviction", {"garbage": True}),
    ("POST", f"{PODS}/p1/eviction", "garbage"),
    ("POST", f"{PODS}/p1/eviction", {"kind": "Eviction", "metadata": {"name": "other"}}),
]


@pytest.mark.parametrize(("method", "path", "body"), BAD_BODIES)
def test_malformed_bodies_are_a_4xx_status_and_delete_nothing(
    api: TestClient, database: Database, method: str, path: str, body: Any
) -> None:
    before = count_events(database)
    r = api.request(method, path, headers=W, content=orjson.dumps(body))
    assert 400 <= r.status_code < 500 and r.json()["kind"] == "Status", r.text
    _same_log(database, before)
    assert api.get(f"{PODS}/p1", headers=W).status_code == 200


def test_a_merge_patch_with_metadata_5_and_an_oversized_pod_are_refused(
    api: TestClient, database: Database
) -> None:
    before = count_events(database)
    merge = {**W, "Content-Type": "application/merge-patch+json"}
    r = api.patch(f"{PODS}/p1", headers=merge, content=b'{"metadata": 5}')
    assert r.status_code == 400, r.text
    big = pod("big")
    big["metadata"]["annotations"] = {"blob": "x" * (1100 * 1024)}
    r = api.post(PODS, headers=W, content=orjson.dumps(big))
    assert r.status_code in (413, 422), r.text
    _same_log(database, before)


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ({"resourceVersionMatch": "Garbage", "resourceVersion": "1"}, 422),
        ({"resourceVersionMatch": "Exact"}, 422),
        ({"watch": "maybe"}, 400),
        ({"labelSelector": "a,,b"}, 400),
        ({"allowWatchBookmarks": "perhaps"}, 400),
    ],
)
def test_invalid_query_parameters_are_refused_as_upstream(
    api: TestClient, query: dict[str, str], code: int
) -> None:
    r = api.get(PODS, headers=W, params=query)
    assert r.status_code == code and r.json()["kind"] == "Status", r.text


def test_a_watch_from_resource_version_0_starts_with_the_current_objects_as_added(api: TestClient) -> None:
    assert api.post(PODS, headers=W, content=orjson.dumps(pod("gone"))).status_code == 201
    assert api.delete(f"{PODS}/gone", headers=W).status_code == 200
    r = api.get(PODS, headers=W, params={"watch": "true", "resourceVersion": "0", "timeoutSeconds": "1"})
    events = [orjson.loads(line) for line in r.text.splitlines() if line.strip()]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "p1")]


def test_json_patch_on_a_podgroups_status_and_on_a_pod(api: TestClient, database: Database) -> None:
    group = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "dry"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}},
    }
    path = "/apis/scheduling.k8s.io/v1beta1/namespaces/dry/podgroups"
    assert api.post(path, headers=W, content=orjson.dumps(group)).status_code == 201
    jp = {**W, "Content-Type": "application/json-patch+json"}
    cond = {
        "type": "Ready",
        "status": "True",
        "reason": "Checked",
        "message": "ok",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    ops = [{"op": "add", "path": "/status/conditions", "value": [cond]}]
    r = api.patch(f"{path}/g/status", headers=jp, content=orjson.dumps(ops))
    assert r.status_code == 200, r.text
    assert any(c["type"] == "Ready" for c in r.json()["status"]["conditions"])
    before = count_events(database)
    bad = [{"op": "test", "path": "/metadata/name", "value": "other"}]
    r = api.patch(f"{PODS}/p1", headers=jp, content=orjson.dumps(bad))
    assert r.status_code == 422, r.text
    r = api.patch(f"{PODS}/p1", headers=jp, content=orjson.dumps([{"op": "remove", "path": "/nope"}]))
    assert r.status_code == 422, r.text
    _same_log(database, before)
    ops = [{"op": "add", "path": "/metadata/labels", "value": {"x": "y"}}]
    r = api.patch(f"{PODS}/p1", headers=jp, content=orjson.dumps(ops))
    assert r.status_code == 200 and r.json()["metadata"]["labels"] == {"x": "y"}, r.text


def test_server_side_apply_merges_partial_configs_and_refuses_conflicts(
    api: TestClient, database: Database
) -> None:
    ssa = {**W, "Content-Type": "application/apply-patch+yaml"}

    def apply(manager: str, body: dict[str, Any], **params: str) -> Any:
        return api.patch(
            f"{PODS}/s1", headers=ssa, params={"fieldManager": manager, **params}, content=orjson.dumps(body)
        )

    full = pod("s1")
    full["metadata"]["labels"] = {"app": "web"}
    assert apply("a", full).status_code == 201
    labels_only = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "s1", "labels": {"team": "x"}}}
    r = apply("b", labels_only)
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["labels"] == {"app": "web", "team": "x"}
    assert r.json()["spec"]["containers"][0]["name"] == "c"
    before = count_events(database)
    takeover = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "s1", "labels": {"app": "db"}}}
    r = apply("b", takeover)
    assert r.status_code == 409 and r.json()["message"] == (
        'Apply failed with 1 conflict: conflict with "a" using v1: .metadata.labels.app'
    )
    _same_log(database, before)
    r = apply("b", takeover, force="true")
    assert r.status_code == 200 and r.json()["metadata"]["labels"] == {"app": "db"}, r.text
    # b no longer applies team: its own field is removed; a's fields stay
    assert "team" not in r.json()["metadata"]["labels"]
