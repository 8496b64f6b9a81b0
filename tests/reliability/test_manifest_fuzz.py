"""Hypothesis-generated manifests, valid and broken (wrong types, negative quantities, missing
fields, unknown kinds, huge strings, bad YAML), through the path the CLI and the API take:
read documents, validate, admit and append in one transaction.

Every request ends in exactly one of:
- invalid: the documents were refused before any write (parse or field errors) -> 0 events;
- refused by the ledger (a LedgerError, e.g. a payload over 1 MiB) -> 0 events;
- rejected by admission -> exactly 1 event (AdmissionRejected), objects unchanged;
- applied -> exactly the returned events, each object's projection row at its event.
Any other exception fails the test (it would be a traceback for the user). The CLI is run on a
few of each kind: exit code 1 and an ``error:`` line for the broken ones, never a traceback.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
from collections import Counter
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from api.services.objects import load_documents
from ledger.errors import LedgerError
from ledger.resources.parse import iter_documents
from tests.ledger_helpers import apply

from .conftest import PODLEDGER, ROOT, rows, scalar

NAMES = st.text(alphabet="abcdefghij0123456789-", min_size=1, max_size=12).map(lambda s: f"f{s}x")
QUANTITIES = st.sampled_from(["100m", "1", "250m", "2", "1500m", "0"])
MEMORY = st.sampled_from(["64Mi", "1Gi", "512Mi", "2G"])
HUGE = st.sampled_from([300, 70_000, 1_200_000]).map(lambda n: "x" * n)
WRONG = st.one_of(
    st.integers(-5, 5),
    st.booleans(),
    st.none(),
    st.just([]),
    st.just({}),
    st.just("not-a-thing"),
    st.floats(-1, 1),
)


@st.composite
def valid_manifest(draw: Any) -> dict[str, Any]:
    kind = draw(st.sampled_from(["Pod", "Pod", "Node", "PriorityClass", "PodGroup"]))
    name = draw(NAMES)
    if kind == "Pod":
        containers = [
            {"name": f"c{i}", "resources": {"requests": {"cpu": draw(QUANTITIES), "memory": draw(MEMORY)}}}
            for i in range(draw(st.integers(1, 3)))
        ]
        spec: dict[str, Any] = {"containers": containers}
        if draw(st.booleans()):
            spec["priorityClassName"] = draw(st.sampled_from(["fz-low", "fz-missing"]))  # missing: refused
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "fz"},
            "spec": spec,
        }
    if kind == "Node":
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"zone": draw(st.sampled_from(["a", "b"]))}},
            "status": {"allocatable": {"cpu": draw(QUANTITIES), "memory": draw(MEMORY), "pods": 110}},
        }
    if kind == "PriorityClass":
        return {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": draw(st.sampled_from(["fz-low", name]))},
            "value": draw(st.integers(-100, 10_000)),
        }
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "fz"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": draw(st.integers(1, 8))}}},
    }


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.append((*prefix, k))
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.append((*prefix, i))
            out.extend(_paths(v, (*prefix, i)))
    return out


def _parent(doc: Any, path: tuple[Any, ...]) -> Any:
    for k in path[:-1]:
        doc = doc[k]
    return doc


@st.composite
def broken_manifest(draw: Any) -> dict[str, Any]:
    doc = copy.deepcopy(draw(valid_manifest()))
    how = draw(st.sampled_from(["wrong-type", "negative", "missing", "unknown-kind", "huge", "extra"]))
    paths = _paths(doc)
    if how == "wrong-type":
        path = draw(st.sampled_from(paths))
        _parent(doc, path)[path[-1]] = draw(WRONG)
    elif how == "negative":
        qty = [p for p in paths if p[-1] in ("cpu", "memory", "pods", "minCount")]
        if qty:
            path = draw(st.sampled_from(qty))
            _parent(doc, path)[path[-1]] = draw(st.sampled_from(["-1", "-100m", -3, "-2Gi"]))
    elif how == "missing":
        path = draw(st.sampled_from(paths))
        del _parent(doc, path)[path[-1]]
    elif how == "unknown-kind":
        doc["kind"] = draw(st.sampled_from(["Pdo", "Deployment", "", "node"]))
    elif how == "huge":
        where = draw(st.sampled_from(["name", "label", "annotation"]))
        value = draw(HUGE)
        if where == "name":
            doc["metadata"]["name"] = value
        elif where == "label":
            doc["metadata"].setdefault("labels", {})["k"] = value
        else:
            doc["metadata"].setdefault("annotations", {})["note"] = value
    else:
        doc["spec" if "spec" in doc else "metadata"]["unknownField"] = draw(WRONG)
    return doc


def _bad_yaml(text: str, cut: int, junk: str) -> str:
    return text[: cut % max(1, len(text))] + junk


@st.composite
def request_text(draw: Any) -> tuple[str, str]:
    """(label, text) of one request: 1-3 documents, some broken, as YAML or JSON, or bad YAML."""
    docs = draw(st.lists(st.one_of(valid_manifest(), broken_manifest()), min_size=1, max_size=3))
    fmt = draw(st.sampled_from(["yaml", "yaml", "json", "bad-yaml"]))
    if fmt == "json" and len(docs) == 1:
        return "json", json.dumps(docs[0])
    text = yaml.safe_dump_all(docs, sort_keys=False)
    if fmt == "bad-yaml":
        junk = draw(
            st.sampled_from([": : :\n", "\t- [unclosed\n", "key: {a: 1\n", "---\n- - - x: [\n", "\x00"])
        )
        return "bad-yaml", _bad_yaml(text, draw(st.integers(0, 10_000)), junk)
    return "yaml", text


def _state(database) -> tuple[int, int, int]:
    r = rows(
        database,
        "SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM objects), "
        "(SELECT coalesce(max(updated_position), 0) FROM objects)",
    )[0]
    return int(r[0]), int(r[1]), int(r[2])


def run_request(database, text: str) -> tuple[str, list[str]]:
    """Apply like the CLI does; return (outcome, messages) after checking the event counts."""
    events0, objects0, upd0 = _state(database)
    messages: list[str]
    try:
        objs, errors = load_documents(iter_documents(text, "fuzz"))
        if errors or not objs:
            outcome, messages = "invalid", errors or ["no objects"]
        else:
            res = apply(database, objs, actor="fuzz")
            outcome = "rejected" if res.rejected else "applied"
            messages = res.errors
    except LedgerError as exc:
        outcome, messages = "ledger-error", [str(exc)]
    events1, objects1, upd1 = _state(database)
    if outcome == "applied":
        assert events1 - events0 == len(res.events) <= len(objs)
        last: dict[tuple[str, str, str], int] = {}  # a request may name one object twice
        for ev in res.events:
            obj = ev.data["object"]
            last[(obj["kind"], obj["metadata"].get("namespace") or "", obj["metadata"]["name"])] = ev.position
        for (kind, ns, name), position in last.items():
            pos = scalar(
                database,
                "SELECT updated_position FROM objects WHERE kind = %(k)s AND namespace = %(n)s AND name = %(m)s",
                k=kind,
                n=ns,
                m=name,
            )
            assert pos == position, (kind, ns, name, position, pos)
    elif outcome == "rejected":
        assert events1 == events0 + 1
        assert (
            scalar(database, "SELECT type FROM events ORDER BY position DESC LIMIT 1") == "AdmissionRejected"
        )
        assert (objects1, upd1) == (objects0, upd0)
        assert messages
    else:
        assert (events1, objects1, upd1) == (events0, objects0, upd0), outcome
        assert messages and all(isinstance(m, str) and m.strip() for m in messages)
    assert not any("Traceback" in m for m in messages)
    return outcome, messages


@pytest.mark.timeout(150)
def test_generated_manifests_never_partially_append(database):
    seen: Counter[str] = Counter()

    @settings(
        max_examples=250,
        deadline=3000,
        derandomize=True,
        database=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
        ],
    )
    @given(request_text())
    def check(req: tuple[str, str]) -> None:
        label, text = req
        outcome, _ = run_request(database, text)
        seen[outcome] += 1
        seen[f"{label}:{outcome}"] += 1

    check()
    # the generator really reached every outcome
    assert seen["applied"] >= 20 and seen["invalid"] >= 20 and seen["rejected"] >= 3, seen
    assert seen["ledger-error"] + seen["invalid"] >= 1, seen


CLI_CASES = {
    "bad-yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: a\n",
    "wrong-type": "apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: fz}\nspec: {containers: 7}\n",
    "negative": (
        "apiVersion: v1\nkind: Node\nmetadata: {name: n-neg}\nstatus: {allocatable: {cpu: '-4', memory: 1Gi}}\n"
    ),
    "missing-name": "apiVersion: v1\nkind: Pod\nmetadata: {namespace: fz}\nspec: {containers: [{name: c}]}\n",
    "unknown-kind": "apiVersion: v1\nkind: Pdo\nmetadata: {name: a}\n",
    "huge-annotation": (
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: n-huge\n  annotations: {note: '"
        + "x" * 1_200_000
        + "'}\n"
    ),
    "second-doc-broken": (
        "apiVersion: v1\nkind: Node\nmetadata: {name: n-ok-1}\n---\n"
        "apiVersion: v1\nkind: Node\nmetadata: {name: n-bad}\nstatus: {allocatable: {cpu: lots}}\n"
    ),
    "refused-by-admission": (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: fz}\n"
        "spec: {priorityClassName: nope, containers: [{name: c}]}\n"
    ),
    "valid": "apiVersion: v1\nkind: Node\nmetadata: {name: n-ok-2}\nstatus: {allocatable: {cpu: '4'}}\n",
}


def _cli_apply(db_url: str, path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PODLEDGER_DATABASE_URL=db_url)
    return subprocess.run(
        [PODLEDGER, "apply", "-f", str(path)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.timeout(120)
def test_cli_apply_broken_manifests(database, db_url, tmp_path):
    results = {}
    for label, text in CLI_CASES.items():
        path = tmp_path / f"{label}.yaml"
        path.write_text(text)
        before = _state(database)[0]
        p = _cli_apply(db_url, path)
        out = p.stdout + p.stderr
        appended = _state(database)[0] - before
        results[label] = (p.returncode, appended)
        assert "Traceback" not in out, (label, out[-3000:])
        if label == "valid":
            assert (p.returncode, appended) == (0, 1), (label, out)
        else:
            assert p.returncode == 1, (label, out[-2000:])
            assert "error" in p.stderr.lower(), (label, p.stderr[-2000:])
            assert appended == (1 if label == "refused-by-admission" else 0), (label, appended, out[-2000:])
    assert len(results) == len(CLI_CASES)


@pytest.mark.timeout(60)
def test_cli_errors_quote_user_text_verbatim(database, db_url, tmp_path):
    path = tmp_path / "markup.yaml"
    path.write_text(
        'apiVersion: v1\nkind: Node\nmetadata: {name: "n[bold]x"}\n---\napiVersion: v1\nkind: "[/x]"\n'
    )
    p = _cli_apply(db_url, path)
    assert p.returncode == 1
    assert "Traceback" not in p.stderr, p.stderr[-1500:]
    assert "n[bold]x" in p.stderr and "[/x]" in p.stderr, p.stderr
