"""Issue 37 item 4 (parsing): an alias bomb and duplicate keys are refused within milliseconds on
every surface that reads manifests (the parser, ``podledger apply`` from files and stdin, the
JSON API's apply, scenario/what-if files, and ``load_body`` for the Kubernetes API), naming the
object and the path with upstream's words, and nothing is appended.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.cli.objects import _iter_sources
from api.http.app import create_app
from api.services.objects import load_documents
from ledger.database import Database
from ledger.resources.bounded import BodyError, load_body, load_yaml_values
from ledger.resources.errors import DocumentParseError
from ledger.resources.parse import parse_documents, validate
from tests.http.conftest import TOKEN_SPEC, auth, count_events
from tests.reliability.conftest import PODLEDGER

FAST = 0.100  # seconds: the bound for refusing a bomb or a duplicate


def bomb(levels: int = 9, fan: int = 9, indent: str = "    ") -> str:
    """The classic "billion laughs": ``fan ** levels`` strings from about 430 bytes."""
    lines = [f"l0: &l0 [{', '.join(['lol'] * fan)}]"]
    for n in range(1, levels):
        lines.append(f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * fan)}]")
    return "".join(indent + line + "\n" for line in lines)


BOMB_POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: boom}\nspec:\n  x:\n" + bomb()
DUP_POD_YAML = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: team-a
  name: web2
spec:
  containers:
  - name: c
    image: a
    image: b
"""
DUP_POD_JSON = (
    '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "team-a", '
    '"name": "web2"}, "spec": {"containers": [{"name": "c", "image": "a", "image": "b"}]}}'
)
DUP_PATHS = ["metadata.name", "spec.containers[0].image"]


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t0 = time.perf_counter()
    try:
        out: Any = fn()
    except Exception as exc:  # the refusal is the result
        out = exc
    return out, time.perf_counter() - t0


# ------------------------------------------------------------------------------ the parser


def test_bomb_is_refused_in_milliseconds_as_kubectl_does() -> None:
    assert len(BOMB_POD) < 600
    for text in (
        BOMB_POD,
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  spec:\n" + bomb(indent="    "),
    ):
        out, took = timed(lambda t=text: parse_documents(t, "bomb.yaml"))
        assert isinstance(out, DocumentParseError), out
        assert "document contains excessive aliasing" in str(out)
        assert took < FAST, took


def test_a_recursive_alias_is_refused() -> None:
    with pytest.raises(DocumentParseError, match="recursive alias"):
        parse_documents("apiVersion: v1\nkind: Pod\nspec: &a {x: [*a]}\n", "r.yaml")


def test_ordinary_aliases_and_big_alias_free_documents_pass() -> None:
    text = """\
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: x, labels: &l {app: web, tier: front}}
spec:
  containers:
  - {name: c, image: i, resources: {requests: &r {cpu: 100m}, limits: *r}}
  nodeSelector: *l
"""
    [doc] = parse_documents(text, "ok.yaml")
    obj, errs = validate(doc)
    assert not errs and obj is not None
    assert doc.raw["spec"]["nodeSelector"] == {"app": "web", "tier": "front"}
    # 500,000 nodes without aliases: size alone is not "aliasing"
    many = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: big}\nspec:\n  x: [" + ",".join(["1"] * 500_000) + "]\n"
    )
    [big] = parse_documents(many, "big.yaml")
    assert len(big.raw["spec"]["x"]) == 500_000
    # a bomb just small enough (9**5 ≈ 59,000 strings) is not refused: the rule is kubectl's ratio
    [small] = parse_documents("apiVersion: v1\nkind: Pod\nspec:\n  x:\n" + bomb(levels=5), "small.yaml")
    assert small.raw["spec"]["x"]["l0"] == ["lol"] * 9


@pytest.mark.parametrize("text,source", [(DUP_POD_YAML, "dup.yaml"), (DUP_POD_JSON, "dup.json")])
def test_duplicate_keys_are_field_errors_naming_object_and_path(text: str, source: str) -> None:
    (docs, took) = timed(lambda: parse_documents(text, source))
    [doc] = docs
    obj, errs = validate(doc)
    assert took < FAST
    assert obj is None
    assert [e.field for e in errs] == DUP_PATHS
    assert [e.message for e in errs] == [f'duplicate field "{p}"' for p in DUP_PATHS]
    assert {(e.kind, e.namespace) for e in errs} == {("Pod", "team-a")}
    assert str(errs[0]).startswith('error: Pod team-a/web2: metadata.name: duplicate field "metadata.name"')


def test_duplicates_inside_a_list_name_the_item() -> None:
    text = (
        '{"apiVersion": "v1", "kind": "List", "items": ['
        '{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "ok"}},'
        '{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "labels": {"a": "1", "a": "2"}}}]}'
    )
    first, second = parse_documents(text, "list.json")
    assert validate(first)[1] == []
    errs = validate(second)[1]
    assert [(e.field, e.item) for e in errs] == [("metadata.labels.a", 2)]
    with pytest.raises(DocumentParseError, match='duplicate field "kind"'):
        parse_documents("apiVersion: v1\nkind: List\nkind: List\nitems: []\n", "l.yaml")


def test_merge_keys_may_be_overridden() -> None:
    text = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  labels:\n    <<: {a: '1'}\n    a: '2'\n"
    [doc] = parse_documents(text, "merge.yaml")
    assert validate(doc)[1] == []
    assert doc.raw["metadata"]["labels"] == {"a": "2"}


def test_load_body_for_the_kubernetes_api() -> None:
    for body, ctype, words in (
        (BOMB_POD.encode(), "application/yaml", "excessive aliasing"),
        (DUP_POD_YAML.encode(), "application/yaml", 'duplicate field "metadata.name"'),
        (DUP_POD_JSON.encode(), "application/json", 'duplicate field "metadata.name"'),
        (b"a: 1\n---\nb: 2\n", "application/yaml", "more than one"),
        (b"\xff", "application/json", "UTF-8"),
        (b"[" * 100_000, "application/json", "nested"),
        (b"{", "application/json", ""),
    ):
        out, took = timed(lambda b=body, c=ctype: load_body(b, c))
        assert isinstance(out, BodyError), (body[:40], out)
        assert words in out.problem, (words, out.problem)
        assert took < FAST, took
    assert load_body(b'{"a": 1.5, "b": [1]}') == {"a": 1.5, "b": [1]}
    assert load_body(b"a: 1\n", "application/yaml") == {"a": 1}
    assert load_body(b"") is None


def test_scenario_and_config_yaml_are_bounded() -> None:
    with pytest.raises(DocumentParseError, match="excessive aliasing"):
        load_yaml_values("x:\n" + bomb(), "scenario.yaml")
    with pytest.raises(DocumentParseError, match='duplicate field "spec.a"'):
        load_yaml_values("spec:\n  a: 1\n  a: 2\n", "config.yaml")


# ------------------------------------------------------------------------------ podledger apply


def _cli_read(files: list[str]) -> tuple[list[Any], list[str]]:
    return load_documents(_iter_sources(files, 3 * 2**20))  # type: ignore[no-any-return]


def test_cli_apply_reads_bounded(tmp_path: Path) -> None:
    (tmp_path / "bomb.yaml").write_text(BOMB_POD)
    (tmp_path / "dup.json").write_text(DUP_POD_JSON)
    (objs, errors), took = timed(lambda: _cli_read([str(tmp_path / "bomb.yaml")]))
    assert objs == [] and len(errors) == 1 and "excessive aliasing" in errors[0]
    assert took < FAST, took
    (objs, errors), took = timed(lambda: _cli_read([str(tmp_path / "dup.json")]))
    assert objs == [] and [e.split(": ", 2)[1] for e in errors] == ["Pod team-a/web2"] * 2
    assert 'duplicate field "spec.containers[0].image"' in errors[1]
    assert took < FAST, took


@pytest.mark.timeout(120)
def test_cli_apply_refuses_and_appends_nothing(database: Database, tmp_path: Path) -> None:
    before = count_events(database)
    (tmp_path / "bomb.yaml").write_text(BOMB_POD)
    (tmp_path / "dup.yaml").write_text(DUP_POD_YAML)
    for args, stdin, words in (
        (["-f", str(tmp_path / "bomb.yaml")], None, "excessive aliasing"),
        (["-f", "-"], BOMB_POD.encode(), "excessive aliasing"),
        (
            ["-f", str(tmp_path / "dup.yaml")],
            None,
            'Pod team-a/web2: metadata.name: duplicate field "metadata.name"',
        ),
    ):
        res = subprocess.run(
            [PODLEDGER, "apply", *args], input=stdin, capture_output=True, env=dict(os.environ), timeout=60
        )
        err = res.stderr.decode()
        assert res.returncode == 1 and "Traceback" not in err, err
        assert words in err, err
    assert count_events(database) == before


def test_cli_refuses_an_oversized_manifest_before_reading_it(database: Database, tmp_path: Path) -> None:
    """A 48 MB manifest: refused at once (the size is checked before reading), in bounded memory;
    stdin is refused while it is read, at the limit."""
    big = tmp_path / "big.yaml"
    pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p%d}\nspec: {containers: [{name: c}]}\n---\n"
    with big.open("w") as fh:
        n = 0
        while fh.tell() < 48_000_000:
            fh.write(pod % n)
            n += 1
    before = count_events(database)
    res = subprocess.run(
        ["/usr/bin/time", "-f", "MAXRSS=%M", PODLEDGER, "apply", "-f", str(big)],
        capture_output=True,
        env=dict(os.environ),
        timeout=120,
    )
    err = res.stderr.decode()
    assert res.returncode == 1 and "Traceback" not in err, err
    assert "over the 3 MiB limit of one apply" in err, err
    rss_kb = int(err.rsplit("MAXRSS=", 1)[1].split()[0])
    assert rss_kb < 300_000, rss_kb
    with big.open("rb") as fh:
        res = subprocess.run(
            ["/usr/bin/time", "-f", "MAXRSS=%M", PODLEDGER, "apply", "-f", "-"],
            stdin=fh,
            capture_output=True,
            env=dict(os.environ),
            timeout=120,
        )
    err = res.stderr.decode()
    assert res.returncode == 1 and "Traceback" not in err, err
    assert "over the limit of one apply (3 MiB" in err, err
    assert int(err.rsplit("MAXRSS=", 1)[1].split()[0]) < 500_000
    assert count_events(database) == before


# ------------------------------------------------------------------------------ the JSON API


@pytest.fixture()
def client(database: Database) -> Iterator[TestClient]:
    with TestClient(create_app(database, TOKEN_SPEC), raise_server_exceptions=False) as c:
        yield c


def test_json_api_apply_refuses_bombs_and_duplicates(client: TestClient, database: Database) -> None:
    before = count_events(database)
    headers = {**auth("writer"), "Content-Type": "application/yaml"}
    client.get("/podledger/v1/nodes", headers=auth("reader"))  # warm up (first request opens the pool)
    r, took = timed(lambda: client.post("/podledger/v1/apply", content=BOMB_POD, headers=headers))
    assert r.status_code == 422, r.text
    assert "excessive aliasing" in r.json()["message"]
    assert took < FAST, took
    for body in (DUP_POD_YAML, DUP_POD_JSON):
        r, took = timed(lambda b=body: client.post("/podledger/v1/apply", content=b, headers=headers))
        assert r.status_code == 422, r.text
        details = r.json()["details"]
        assert [(d["kind"], d["namespace"], d["name"], d["field"]) for d in details] == [
            ("Pod", "team-a", "web2", p) for p in DUP_PATHS
        ]
        assert details[0]["message"] == 'duplicate field "metadata.name"'
        assert took < FAST, took
    assert count_events(database) == before


# ------------------------------------------------------------------------------ the Kubernetes API


def test_kubernetes_api_refuses_bombs_and_strict_duplicates(client: TestClient, database: Database) -> None:
    """The Kubernetes-compatible API's writes: each body read once by the shared bounded parser (api/k8s/decode.py)."""
    before = count_events(database)
    path = "/api/v1/namespaces/team-a/pods"
    yaml_h = {**auth("writer"), "Content-Type": "application/yaml"}
    json_h = {**auth("writer"), "Content-Type": "application/json"}
    client.get("/api/v1/nodes", headers=auth("reader"))  # warm up
    for body, headers in (
        (BOMB_POD, yaml_h),
        (BOMB_POD, {**yaml_h, "Content-Type": "application/apply-patch+yaml"}),
    ):
        method = "PATCH" if "apply" in headers["Content-Type"] else "POST"
        target = path + "/boom?fieldManager=t" if method == "PATCH" else path
        r, took = timed(
            lambda m=method, t=target, b=body, h=headers: client.request(m, t, content=b, headers=h)
        )
        assert r.status_code == 400, r.text
        assert r.json()["kind"] == "Status" and r.json()["reason"] == "BadRequest"
        assert "document contains excessive aliasing" in r.json()["message"]
        assert took < FAST, took
    for body, headers in ((DUP_POD_JSON, json_h), (DUP_POD_YAML, yaml_h)):
        r, took = timed(
            lambda b=body, h=headers: client.post(path + "?fieldValidation=Strict", content=b, headers=h)
        )
        assert r.status_code == 400, r.text
        assert r.json()["message"] == (
            'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
            'duplicate field "metadata.name", duplicate field "spec.containers[0].image"'
        )
        assert took < FAST, took
    assert count_events(database) == before
    # a clean body still reaches the handlers unchanged
    ok = '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "fine", "namespace": "team-a"}, "spec": {"containers": [{"name": "c"}]}}'
    r = client.post(path + "?fieldValidation=Strict", content=ok, headers=json_h)
    assert r.status_code == 201, r.text
    assert r.json()["metadata"]["name"] == "fine"
