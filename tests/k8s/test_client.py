"""Acceptance with the official ``kubernetes`` Python client against ``podledger serve``."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from ledger.sql import rows, scalar
from tests.k8s.conftest import PODLEDGER, Server

kubernetes = pytest.importorskip("kubernetes", reason="the kubernetes client is in the dev extra")
from kubernetes import client, watch  # noqa: E402


def _pod(name: str, ns: str, cpu: str = "1", labels: dict[str, str] | None = None) -> Any:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, namespace=ns, labels=labels),
        spec=client.V1PodSpec(
            containers=[
                client.V1Container(name="c", resources=client.V1ResourceRequirements(requests={"cpu": cpu}))
            ]
        ),
    )


def _head(k8s: Server) -> int:
    with k8s.database.connect() as c:
        return int(scalar(c, "SELECT coalesce(max(position), 0) FROM events"))


def _podledger(k8s: Server, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PODLEDGER, *args], env=k8s.env, capture_output=True, text=True, timeout=300)


def _node(v1: Any, name: str, cpu: str = "8") -> None:
    v1.create_node(
        client.V1Node(
            metadata=client.V1ObjectMeta(name=name),
            status=client.V1NodeStatus(allocatable={"cpu": cpu, "memory": "16Gi", "pods": "20"}),
        )
    )


def test_list_carries_the_log_position_as_resource_version(k8s: Server) -> None:
    v1 = client.CoreV1Api(k8s.client())
    ns = "team-list"
    for i in range(5):
        v1.create_namespaced_pod(ns, _pod(f"p-{i}", ns, labels={"app": "even" if i % 2 == 0 else "odd"}))
    lst = v1.list_namespaced_pod(ns)
    assert int(lst.metadata.resource_version) == _head(k8s)
    assert [p.metadata.name for p in lst.items] == [f"p-{i}" for i in range(5)]
    with k8s.database.connect() as c:
        rvs = dict(
            c.execute(
                "SELECT name, updated_position FROM objects WHERE kind = 'Pod' AND namespace = %(n)s",
                {"n": ns},
            ).fetchall()
        )
    assert {p.metadata.name: int(p.metadata.resource_version) for p in lst.items} == rvs
    assert lst.items[0].spec.containers[0].resources.requests == {"cpu": "1"}

    # limit/continue pages cover the list once, in order, at the first page's resourceVersion
    names, cont, pages = [], None, 0
    while True:
        page = v1.list_namespaced_pod(ns, limit=2, _continue=cont)
        pages += 1
        assert page.metadata.resource_version == lst.metadata.resource_version
        names += [p.metadata.name for p in page.items]
        cont = page.metadata._continue
        if not cont:
            break
    assert names == [f"p-{i}" for i in range(5)] and pages == 3

    assert [p.metadata.name for p in v1.list_namespaced_pod(ns, label_selector="app=even").items] == [
        "p-0",
        "p-2",
        "p-4",
    ]
    assert [p.metadata.name for p in v1.list_namespaced_pod(ns, label_selector="app in (odd)").items] == [
        "p-1",
        "p-3",
    ]
    assert [
        p.metadata.name for p in v1.list_namespaced_pod(ns, field_selector="metadata.name=p-3").items
    ] == ["p-3"]

    # resourceVersionMatch=Exact: the list as of an earlier log position
    third = rvs["p-2"]
    old = v1.list_namespaced_pod(ns, resource_version=str(third), resource_version_match="Exact")
    assert old.metadata.resource_version == str(third)
    assert [p.metadata.name for p in old.items] == ["p-0", "p-1", "p-2"]


def _positions(k8s: Server, ns: str, after: int) -> list[int]:
    """Log positions after ``after`` that change a pod of ``ns`` (its inputs and its decisions)."""
    with k8s.database.connect() as c:
        rows = c.execute(
            "SELECT position FROM events WHERE position > %(a)s AND (stream LIKE %(i)s OR "
            "(stream LIKE %(d)s AND type IN ('PodBound', 'PodNominated', 'PodUnschedulable', 'PodGated', "
            "'PodPreempted'))) ORDER BY position",
            {"a": after, "i": f"pod/{ns}/%", "d": f"sched/pod/{ns}/%"},
        )
        return [int(r[0]) for r in rows]


def _collect(v1: Any, ns: str, rv: str, n: int) -> list[tuple[str, str, int]]:
    w = watch.Watch()
    seen: list[tuple[str, str, int]] = []
    for ev in w.stream(v1.list_namespaced_pod, ns, resource_version=rv, timeout_seconds=60):
        obj = ev["object"]
        seen.append((ev["type"], obj.metadata.name, int(obj.metadata.resource_version)))
        if len(seen) == n:
            w.stop()
            break
    return seen


def test_watch_resumes_from_a_resource_version_across_a_server_restart(k8s: Server) -> None:
    from api.services.objects import load_documents
    from api.services.schedule import schedule_until_idle
    from ledger.resources.parse import parse_documents
    from tests.ledger_helpers import apply, delete_object

    v1 = client.CoreV1Api(k8s.client())
    ns = "team-watch"
    _node(v1, "watch-node", cpu="64")  # room for every pending pod of the module
    rv0 = v1.list_namespaced_pod(ns).metadata.resource_version
    for i in range(3):
        v1.create_namespaced_pod(ns, _pod(f"w-{i}", ns))
    first = _collect(v1, ns, rv0, 3)
    assert [(t, n) for t, n, _ in first] == [("ADDED", "w-0"), ("ADDED", "w-1"), ("ADDED", "w-2")]
    assert [p for _, _, p in first] == _positions(k8s, ns, int(rv0))
    last = first[-1][2]

    # the server goes away; the log moves on without it (new pods, binds, a delete)
    k8s.stop()
    text = "".join(
        f"---\napiVersion: v1\nkind: Pod\nmetadata: {{name: w-{i}, namespace: {ns}}}\n"
        "spec: {containers: [{name: c, resources: {requests: {cpu: '1'}}}]}\n"
        for i in (3, 4)
    )
    objects, errors = load_documents(parse_documents(text, "test"))
    assert not errors
    assert apply(k8s.database, objects, actor="test").ok
    schedule_until_idle(k8s.database)
    delete_object(k8s.database, "Pod", ns, "w-1", actor="test")
    k8s.start()

    expected = _positions(k8s, ns, last)
    assert len(expected) == 2 + 5 + 1  # two creates, five binds, one delete
    resumed = _collect(v1, ns, str(last), len(expected))
    assert [p for _, _, p in resumed] == expected  # nothing missed, nothing repeated
    kinds = {(t, n) for t, n, _ in resumed}
    assert {("ADDED", "w-3"), ("ADDED", "w-4"), ("DELETED", "w-1")} <= kinds
    assert sum(1 for t, _, _ in resumed if t == "MODIFIED") == 5
    # and a new watch from the first position replays the whole story once
    again = _collect(v1, ns, rv0, 3 + len(expected))
    assert again == first + resumed


def test_watch_sends_bookmarks_at_the_head(k8s: Server) -> None:
    v1 = client.CoreV1Api(k8s.client())
    ns = "team-bookmark"
    rv = v1.list_namespaced_pod(ns).metadata.resource_version
    w = watch.Watch()
    marks = []
    for ev in w.stream(
        v1.list_namespaced_pod, ns, resource_version=rv, allow_watch_bookmarks=True, timeout_seconds=20
    ):
        if ev["type"] == "BOOKMARK":
            obj = ev["object"]  # the client hands a bookmark over undecoded
            marks.append(int(obj["metadata"]["resourceVersion"]))
            w.stop()
            break
    assert marks == [_head(k8s)]


def test_writes_with_a_stale_resource_version_conflict_and_append_nothing(k8s: Server) -> None:
    v1 = client.CoreV1Api(k8s.client())
    ns = "team-rv"
    created = v1.create_namespaced_pod(ns, _pod("cas", ns))
    stale = created.metadata.resource_version
    fresh = v1.patch_namespaced_pod("cas", ns, {"metadata": {"labels": {"v": "2"}}})
    assert int(fresh.metadata.resource_version) > int(stale)
    assert fresh.metadata.labels == {"v": "2"}
    assert fresh.spec.containers[0].resources.requests == {"cpu": "1"}  # a merge keeps quantities
    before = _head(k8s)

    again = _pod("cas-2", ns)
    again.metadata.resource_version = stale
    with pytest.raises(client.ApiException) as exc:
        v1.create_namespaced_pod(ns, again)
    assert exc.value.status == 409 and '"reason":"Conflict"' in exc.value.body

    old = v1.read_namespaced_pod("cas", ns)
    old.metadata.resource_version = stale
    old.metadata.labels = {"v": "3"}
    with pytest.raises(client.ApiException) as exc:
        v1.replace_namespaced_pod("cas", ns, old)
    assert exc.value.status == 409 and "the object has been modified" in exc.value.body

    with pytest.raises(client.ApiException) as exc:
        v1.create_namespaced_pod(ns, _pod("cas", ns))
    assert exc.value.status == 409 and '"reason":"AlreadyExists"' in exc.value.body
    assert _head(k8s) == before

    old.metadata.resource_version = fresh.metadata.resource_version
    done = v1.replace_namespaced_pod("cas", ns, old)
    assert done.metadata.labels == {"v": "3"} and int(done.metadata.resource_version) == _head(k8s)


def test_binding_is_a_bind_by_the_caller_and_replay_treats_it_as_input(k8s: Server) -> None:
    v1 = client.CoreV1Api(k8s.client())
    ns = "team-bind"
    _node(v1, "bind-node")
    v1.create_namespaced_pod(ns, _pod("ext", ns))
    body = client.V1Binding(
        metadata=client.V1ObjectMeta(name="ext"),
        target=client.V1ObjectReference(kind="Node", name="bind-node"),
    )
    v1.create_namespaced_binding(ns, body, _preload_content=False)
    pod = v1.read_namespaced_pod("ext", ns)
    # upstream's semantics with no kubelet: bound = Pending with PodScheduled=True; podledger's
    # own phase is an annotation
    assert pod.spec.node_name == "bind-node" and pod.status.phase == "Pending"
    assert pod.metadata.annotations["podledger.io/phase"] == "Bound"
    with k8s.database.connect() as c:
        (ev,) = rows(c, "SELECT data, meta FROM events WHERE stream = 'sched/pod/team-bind/ext'")
    assert ev.data["node"] == "bind-node" and ev.meta["actor"] == "writer" and "cycle" not in ev.meta
    with pytest.raises(client.ApiException) as exc:
        v1.create_namespaced_binding(ns, body, _preload_content=False)
    assert exc.value.status == 409
    # reader tokens may not bind
    reader = client.CoreV1Api(k8s.client("reader"))
    with pytest.raises(client.ApiException) as exc:
        reader.create_namespaced_binding(ns, body, _preload_content=False)
    assert exc.value.status == 403

    assert _podledger(k8s, "verify").returncode == 0
    rep = _podledger(k8s, "replay", "--verify")
    assert rep.returncode == 0 and " 0 mismatches" in rep.stdout, rep.stdout + rep.stderr


def test_an_informer_sees_current_objects_then_changes_and_strict_create_is_400(k8s: Server) -> None:
    v1 = client.CoreV1Api(k8s.client())
    ns = "team-informer"
    v1.create_namespaced_pod(ns, _pod("old", ns))
    v1.create_namespaced_pod(ns, _pod("gone", ns))
    v1.delete_namespaced_pod("gone", ns)
    listed = v1.list_namespaced_pod(ns)
    assert [p.metadata.name for p in listed.items] == ["old"]
    # a watch from resourceVersion 0 ("any"): the current objects as ADDED, not the history
    w = watch.Watch()
    seen = []
    for ev in w.stream(v1.list_namespaced_pod, ns, resource_version="0", timeout_seconds=2):
        seen.append((ev["type"], ev["object"].metadata.name))
        if len(seen) == 1:
            v1.create_namespaced_pod(ns, _pod("new", ns))
        if len(seen) == 2:
            w.stop()
    assert seen == [("ADDED", "old"), ("ADDED", "new")]
    before = _head(k8s)
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "typo", "namespace": ns},
        "spec": {"containers": [{"name": "c", "resource": {"requests": {"cpu": "1"}}}]},
    }
    # the client's own models refuse the typo before sending: send the raw body, as a
    # dynamic client would
    api = k8s.client()
    method, url, headers, data, _ = api.param_serialize(
        "POST",
        "/api/v1/namespaces/{namespace}/pods",
        path_params={"namespace": ns},
        query_params=[("fieldValidation", "Strict")],
        header_params={"Content-Type": "application/json"},
        body=body,
        auth_settings=["BearerToken"],
    )
    res = api.call_api(method, url, header_params=headers, body=data)
    res.read()
    assert res.status == 400
    assert 'strict decoding error: unknown field \\"spec.containers[0].resource\\"' in res.data.decode()
    assert _head(k8s) == before
