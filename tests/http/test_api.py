"""The JSON API against a real PostgreSQL: writes, reads, the log, jobs, health and metrics."""

from __future__ import annotations

import json
import time

from fastapi.testclient import TestClient

from api.http.app import create_app
from ledger.sql import rows, scalar
from tests.http.conftest import TOKEN_SPEC, auth, count_events

NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1", "labels": {"zone": "a"}},
    "status": {"allocatable": {"cpu": "8", "memory": "32Gi"}},
}
PODS_YAML = "---\n".join(
    f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p{i}, namespace: {ns}, labels: {{app: {app}}}}}\n"
    f"spec: {{containers: [{{name: c, resources: {{requests: {{cpu: 100m}}}}}}]}}\n"
    for i, (ns, app) in enumerate([("a", "web"), ("a", "db"), ("b", "web"), ("b", "web"), ("c", "batch")])
)


def apply(client: TestClient, body: str | dict | list, role: str = "writer", **headers: str):  # type: ignore[no-untyped-def,type-arg]
    if isinstance(body, str):
        return client.post(
            "/podledger/v1/apply",
            content=body,
            headers={**auth(role), "Content-Type": "application/yaml", **headers},
        )
    return client.post(
        "/podledger/v1/apply",
        content=json.dumps(body),
        headers={**auth(role), "Content-Type": "application/json", **headers},
    )


def test_apply_json_then_yaml_creates_objects_and_records_the_actor(client, database):
    r = apply(client, NODE)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["results"] == [{"object": "node/n1", "action": "created"}]
    assert [e["type"] for e in body["events"]] == ["NodeCreated"]
    r = apply(client, PODS_YAML)
    assert r.status_code == 200, r.text
    assert [x["action"] for x in r.json()["results"]] == ["created"] * 5
    with database.connect() as c:
        metas = [m for (m,) in c.execute("SELECT meta FROM events ORDER BY position")]
        assert scalar(c, "SELECT count(*) FROM objects WHERE kind = 'Pod'") == 5
    assert len(metas) == 6
    assert all(m["actor"] == "writer" and m["via"] == "http" and m["request_id"] for m in metas)
    assert r.headers["X-Request-ID"] == metas[-1]["request_id"]
    # same manifests again: unchanged, nothing appended
    again = apply(client, PODS_YAML)
    assert again.status_code == 200 and {x["action"] for x in again.json()["results"]} == {"unchanged"}
    assert again.json()["events"] == [] and count_events(database) == 6


def test_invalid_manifest_is_422_with_field_paths_and_appends_nothing(client, database):
    bad = PODS_YAML.replace("cpu: 100m}}}]}\n", "cpu: -1}}}]}\n", 1)
    r = apply(client, bad)
    assert r.status_code == 422
    body = r.json()
    assert body["error"] == "invalid"
    d = body["details"][0]
    assert (d["kind"], d["namespace"], d["name"]) == ("Pod", "a", "p0")
    assert d["field"] == "spec.containers[0].resources.requests.cpu" and d["document"] == 1
    assert count_events(database) == 0
    # malformed YAML names the line; an empty body and a non-object are 422 too
    r = apply(client, "apiVersion: v1\nkind: Pod\nmetadata: [unclosed\n")
    assert r.status_code == 422 and r.json()["details"][0]["line"] is not None
    assert apply(client, "").status_code == 422
    assert apply(client, [1, 2]).status_code == 422
    assert client.post("/podledger/v1/apply", content=b"\xff\xfe", headers=auth("writer")).status_code == 422
    assert count_events(database) == 0


def test_admission_refusal_is_422_and_recorded_once_with_the_actor(client, database):
    pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p1}\nspec: {priorityClassName: gold, containers: [{name: c}]}\n"
    r = apply(client, pod, role="admin")
    assert r.status_code == 422
    body = r.json()
    assert body["error"] == "rejected" and body["position"] == 1
    assert any("gold" in d["message"] for d in body["details"])
    with database.connect() as c:
        found = rows(c, "SELECT type, data, meta FROM events")
        assert scalar(c, "SELECT count(*) FROM objects") == 0
    assert [r.type for r in found] == ["AdmissionRejected"]
    assert found[0].data["actor"] == "admin" and found[0].meta["actor"] == "admin"


def test_idempotency_key_makes_a_retry_append_nothing(client, database):
    key = {"Idempotency-Key": "req-7f3a"}
    first = apply(client, PODS_YAML, **key)
    assert first.status_code == 200 and first.json()["replayed"] is False
    n = count_events(database)
    retry = apply(client, PODS_YAML, **key)
    assert retry.status_code == 200
    assert retry.json()["replayed"] is True
    assert retry.json()["events"] == first.json()["events"]
    assert count_events(database) == n
    # a rejected request retried with its key answers the same refusal, recorded once
    bad = "apiVersion: v1\nkind: Pod\nmetadata: {name: q}\nspec: {priorityClassName: gold, containers: [{name: c}]}\n"
    r1 = apply(client, bad, **{"Idempotency-Key": "req-rej"})
    r2 = apply(client, bad, **{"Idempotency-Key": "req-rej"})
    assert r1.status_code == r2.status_code == 422
    assert r1.json()["position"] == r2.json()["position"]
    assert count_events(database, "type = 'AdmissionRejected'") == 1
    # delete with a key: the retry replays instead of answering 404
    d1 = client.delete("/podledger/v1/pods/a/p0", headers={**auth("writer"), "Idempotency-Key": "del-1"})
    d2 = client.delete("/podledger/v1/pods/a/p0", headers={**auth("writer"), "Idempotency-Key": "del-1"})
    assert d1.status_code == d2.status_code == 200
    assert d2.json()["replayed"] is True and d1.json()["event"] == d2.json()["event"]
    assert count_events(database, "type = 'PodDeleted'") == 1


def test_if_match_conflict_is_409_and_appends_nothing(client, database):
    assert apply(client, NODE).status_code == 200
    got = client.get("/podledger/v1/nodes/-/n1", headers=auth("reader"))
    assert got.status_code == 200 and got.headers["ETag"] == '"1"'
    changed = {**NODE, "metadata": {**NODE["metadata"], "labels": {"zone": "b"}}}
    n = count_events(database)
    stale = apply(client, changed, **{"If-Match": '"0"'})
    assert stale.status_code == 409 and stale.json()["error"] == "conflict"
    assert "expected version 0, found 1" in stale.json()["message"]
    assert count_events(database) == n
    ok = apply(client, changed, **{"If-Match": got.headers["ETag"]})
    assert ok.status_code == 200 and ok.json()["results"][0]["action"] == "updated"
    assert client.get("/podledger/v1/nodes/-/n1", headers=auth("reader")).headers["ETag"] == '"2"'
    # the old ETag is now stale, for deletes too
    assert (
        client.delete("/podledger/v1/nodes/-/n1", headers={**auth("writer"), "If-Match": '"1"'}).status_code
        == 409
    )
    assert (
        client.delete("/podledger/v1/nodes/-/n1", headers={**auth("writer"), "If-Match": '"2"'}).status_code
        == 200
    )
    # If-Match needs one object; a malformed one is 400
    assert apply(client, PODS_YAML, **{"If-Match": '"0"'}).status_code == 400
    assert apply(client, NODE, **{"If-Match": "abc"}).status_code == 400
    # "0" = create only if absent
    assert apply(client, NODE, **{"If-Match": '"0"'}).status_code == 409  # the stream exists (version 3)


def test_delete_get_and_404s(client, database):
    assert apply(client, PODS_YAML).status_code == 200
    r = client.get("/podledger/v1/pods/a/p0", headers=auth("reader"))
    assert (
        r.status_code == 200
        and r.json()["metadata"]["name"] == "p0"
        and r.json()["status"]["phase"] == "Pending"
    )
    d = client.delete("/podledger/v1/po/a/p0", headers=auth("writer"))
    assert (
        d.status_code == 200
        and d.json()["deleted"] == "pod/a/p0"
        and d.json()["event"]["type"] == "PodDeleted"
    )
    with database.connect() as c:
        meta = scalar(c, "SELECT meta FROM events WHERE type = 'PodDeleted'")
    assert meta["actor"] == "writer"
    assert client.get("/podledger/v1/pods/a/p0", headers=auth("reader")).status_code == 404
    assert client.delete("/podledger/v1/pods/a/p0", headers=auth("writer")).status_code == 404
    assert client.get("/podledger/v1/gadgets", headers=auth("reader")).json()["error"] == "not_found"
    assert client.get("/podledger/v1/nodes/default/n1", headers=auth("reader")).status_code == 404


def test_list_filters_and_cursor_pagination(client):
    assert apply(client, PODS_YAML).status_code == 200
    seen = []
    cursor = None
    pages = 0
    while True:
        params = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        r = client.get("/podledger/v1/pods", params=params, headers=auth("reader"))
        assert r.status_code == 200
        body = r.json()
        assert body["kind"] == "List" and body["metadata"]["count"] == len(body["items"]) <= 2
        seen += [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in body["items"]]
        pages += 1
        cursor = body["metadata"]["continue"]
        if not cursor:
            break
    assert pages == 3
    assert seen == [("a", "p0"), ("a", "p1"), ("b", "p2"), ("b", "p3"), ("c", "p4")]

    def names(**params: str) -> list[str]:
        r = client.get("/podledger/v1/pods", params=params, headers=auth("reader"))
        assert r.status_code == 200, r.text
        return [i["metadata"]["name"] for i in r.json()["items"]]

    assert names(namespace="b") == ["p2", "p3"]
    assert names(labelSelector="app=web") == ["p0", "p2", "p3"]
    assert names(labelSelector="app!=web,app") == ["p1", "p4"]
    assert names(labelSelector="app=web", namespace="a") == ["p0"]
    assert names(status="Pending") == ["p0", "p1", "p2", "p3", "p4"]
    assert names(status="Bound") == []
    assert (
        client.get("/podledger/v1/pods", params={"cursor": "nonsense"}, headers=auth("reader")).status_code
        == 400
    )
    assert (
        client.get(
            "/podledger/v1/pods", params={"labelSelector": "a in (x)"}, headers=auth("reader")
        ).status_code
        == 400
    )


def test_events_paged_by_position(client):
    assert apply(client, PODS_YAML).status_code == 200
    r = client.get("/podledger/v1/events", params={"after": 0, "limit": 2}, headers=auth("reader"))
    body = r.json()
    assert [e["position"] for e in body["items"]] == [1, 2] and body["next"] == 2 and body["head"] == 5
    r = client.get(
        "/podledger/v1/events", params={"after": body["next"], "limit": 10}, headers=auth("reader")
    )
    assert [e["position"] for e in r.json()["items"]] == [3, 4, 5]
    e = r.json()["items"][0]
    assert (
        e["type"] == "PodCreated"
        and e["meta"]["actor"] == "writer"
        and e["data"]["object"]["metadata"]["name"] == "p2"
    )
    r = client.get("/podledger/v1/events", params={"stream": "pod/b/"}, headers=auth("reader"))
    assert [x["stream"] for x in r.json()["items"]] == ["pod/b/p2", "pod/b/p3"]
    r = client.get("/podledger/v1/events", params={"type": "NodeCreated"}, headers=auth("reader"))
    assert r.json()["items"] == [] and r.json()["next"] == 0


def test_sse_stream_sends_existing_and_live_events(app, client):
    assert apply(client, PODS_YAML).status_code == 200
    with client.stream(
        "GET",
        "/podledger/v1/events/stream",
        params={"after": 3, "max_events": 2, "timeout": 10},
        headers=auth("reader"),
    ) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        text = "".join(r.iter_text())
    blocks = [b for b in text.split("\n\n") if b.startswith("id:")]
    assert [b.splitlines()[0] for b in blocks] == ["id: 4", "id: 5"]
    assert json.loads(blocks[0].splitlines()[2][len("data: ") :])["stream"] == "pod/b/p3"
    # live: an event appended while the client waits is delivered
    import threading

    def later() -> None:
        time.sleep(0.6)
        apply(client, NODE)

    t = threading.Thread(target=later)
    t.start()
    t0 = time.monotonic()
    with client.stream(
        "GET",
        "/podledger/v1/events/stream",
        params={"max_events": 1, "timeout": 15},
        headers={**auth("reader"), "Last-Event-ID": "5"},
    ) as r:
        text = "".join(r.iter_text())
    t.join()
    assert "id: 6\nevent: NodeCreated\n" in text and time.monotonic() - t0 < 10
    # bounded by time when nothing comes
    with client.stream(
        "GET", "/podledger/v1/events/stream", params={"timeout": 0.5}, headers=auth("reader")
    ) as r:
        assert "id:" not in "".join(r.iter_text())


def test_explain_history_and_state_at(demo_client):
    h = auth("reader")
    r = demo_client.get("/podledger/v1/podgroups/team-a/giant/explain", headers=h)
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["name"] == "giant" and doc["text"] and "giant" in doc["text"]
    assert doc["condition"] is None or doc["condition"]["status"] == "False"
    first = demo_client.get("/podledger/v1/podgroups/team-a/giant/history", headers=h).json()["items"]
    assert first[0]["type"] == "PodGroupCreated" and [e["position"] for e in first] == sorted(
        e["position"] for e in first
    )
    created_at = first[0]["position"]
    early = demo_client.get(
        "/podledger/v1/podgroups/team-a/giant/explain", params={"at": created_at}, headers=h
    )
    assert early.status_code == 200 and early.json()["position"] == created_at
    assert demo_client.get("/podledger/v1/podgroups/team-a/nope/explain", headers=h).status_code == 404
    assert (
        demo_client.get(
            "/podledger/v1/podgroups/team-a/giant/explain", params={"at": "yesterday"}, headers=h
        ).status_code
        == 400
    )
    st = demo_client.get("/podledger/v1/state", params={"at": 3}, headers=h)
    assert st.status_code == 200 and st.json()["position"] == 3 and len(st.json()["objects"]) <= 3
    now = demo_client.get("/podledger/v1/state", headers=h).json()
    assert any(o["name"] == "giant" for o in now["objects"])


def test_whatif_is_an_async_job_with_a_status_url(demo_client):
    r = demo_client.post(
        "/podledger/v1/whatif", json={"config": {"preemptionAlgorithm": "None"}}, headers=auth("writer")
    )
    assert r.status_code == 202, r.text
    job = r.json()
    assert job["status"] in ("pending", "running", "succeeded") and r.headers["Location"] == job["statusUrl"]
    deadline = time.monotonic() + 60
    while job["status"] in ("pending", "running") and time.monotonic() < deadline:
        time.sleep(0.2)
        job = demo_client.get(job["statusUrl"], headers=auth("reader")).json()
    assert job["status"] == "succeeded", job
    assert "changed" in job["result"]
    assert demo_client.get("/podledger/v1/jobs/unknown", headers=auth("reader")).status_code == 404
    assert demo_client.post("/podledger/v1/whatif", json={}, headers=auth("reader")).status_code == 403


def test_health_readiness_and_metrics(demo_client, demo_database):
    assert demo_client.get("/healthz").json() == {"status": "ok", "checks": {}}
    r = demo_client.get("/readyz")
    assert r.status_code == 200 and r.json()["checks"] == {
        "database": "ok",
        "writes": "ok",
        "migrations": "ok",
    }
    demo_client.get("/podledger/v1/pods", headers=auth("reader"))
    text = demo_client.get("/metrics", headers=auth("reader")).text
    with demo_database.connect() as c:
        cycles = scalar(c, "SELECT count(*) FROM events WHERE type = 'SchedulingCycleCompleted'")
        pending = scalar(
            c, "SELECT count(*) FROM objects WHERE kind = 'Pod' AND status->>'phase' = 'Pending'"
        )
    assert cycles > 0
    assert f"podledger_scheduling_cycles_total {float(cycles)}" in text
    assert 'podledger_scheduling_attempts_total{result="scheduled"}' in text
    assert 'podledger_scheduling_attempts_total{result="unschedulable"}' in text
    assert "podledger_preemptions_total" in text
    assert f'podledger_queue_depth{{kind="Pod"}} {float(pending)}' in text and pending >= 3
    # the giant gang and the example cluster's vision-pretrain (examples/cluster/40-blocked.yaml)
    assert 'podledger_queue_depth{kind="PodGroup"} 2.0' in text
    assert 'podledger_http_requests_total{method="GET",route="/podledger/v1/{kind}",status="200"}' in text


def test_append_latency_histogram_counts_writes(client):
    assert apply(client, NODE).status_code == 200
    text = client.get("/metrics", headers=auth("reader")).text
    assert 'podledger_append_duration_seconds_count{operation="apply"} 1.0' in text


def test_readyz_fails_on_an_unmigrated_database(server_url):
    import psycopg

    from ledger import db
    from tests.conftest import PREFIX, _admin

    name = f"{PREFIX}unmigrated"
    with psycopg.connect(_admin(server_url), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    url = db.with_database(db.libpq_url(server_url), name)
    database = db.get_database(url, migrate_on_start=False)
    try:
        with TestClient(create_app(database, TOKEN_SPEC)) as c:
            r = c.get("/readyz")
        assert r.status_code == 503 and r.json()["checks"]["database"] == "ok"
        assert r.json()["checks"]["migrations"].startswith("not migrated")
    finally:
        db.dispose(url)


def test_openapi_is_complete_with_examples(client):
    spec = client.get("/openapi.json").json()
    paths = spec["paths"]
    for path in (
        "/podledger/v1/apply",
        "/podledger/v1/{kind}",
        "/podledger/v1/{kind}/{namespace}/{name}",
        "/podledger/v1/{kind}/{namespace}/{name}/explain",
        "/podledger/v1/{kind}/{namespace}/{name}/history",
        "/podledger/v1/events",
        "/podledger/v1/events/stream",
        "/podledger/v1/state",
        "/podledger/v1/whatif",
        "/podledger/v1/jobs/{job_id}",
        "/healthz",
        "/readyz",
        "/metrics",
    ):
        assert path in paths, path
    body = paths["/podledger/v1/apply"]["post"]["requestBody"]["content"]
    assert "PodGroup" in body["application/yaml"]["examples"]["gang"]["value"]
    assert body["application/json"]["examples"]["node"]["value"]["kind"] == "Node"
    for path, ops in paths.items():
        for method, op in ops.items():
            assert op.get("summary"), (method, path)
            if path.startswith("/podledger/v1/"):
                assert op["security"] == [{"bearer": []}], (method, path)
                assert {"401", "403"} <= set(op["responses"]), (method, path)
    assert spec["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert spec["components"]["schemas"]["ApplyResponse"]["examples"]
    assert "/" not in paths and "/login" not in paths  # the dashboard is not part of the API


def test_podledger_routes_live_under_their_own_prefix_not_under_the_kubernetes_paths():
    from api.http.routes.paths import PREFIX

    app = create_app(None, TOKEN_SPEC)  # no request is served: the database is never opened
    paths = set(app.openapi()["paths"])
    assert PREFIX == "/podledger/v1"
    assert not [p for p in paths if p == "/api" or p.startswith(("/api/", "/apis"))]
    json_routes = paths - {"/healthz", "/readyz", "/metrics"}
    assert json_routes and all(p.startswith(PREFIX + "/") for p in json_routes), sorted(json_routes)
    assert {
        f"{PREFIX}/apply",
        f"{PREFIX}/events",
        f"{PREFIX}/{{kind}}/{{namespace}}/{{name}}/explain",
    } <= paths
    with TestClient(app) as c:  # the Kubernetes path answers as Kubernetes does
        assert c.get("/api/v1/pods", headers=auth("reader")).json()["kind"] == "PodList"
