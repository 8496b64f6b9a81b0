import io
import json
import textwrap
from pathlib import Path

import pytest

from ledger.resources.errors import DocumentParseError, FieldError
from ledger.resources.parse import iter_documents, iter_path, load_objects, parse_documents, validate

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  containers:
  - name: c
    resources:
      requests:
        cpu: {cpu}
"""


def test_multi_document_yaml_with_empty_documents() -> None:
    text = (
        "---\n"
        + POD.format(name="a", cpu="1")
        + "---\n---\n# only a comment\n---\n"
        + POD.format(name="b", cpu=0.5)
    )
    docs = parse_documents(text, "x.yaml")
    assert [(d.index, d.name, d.kind) for d in docs] == [(1, "a", "Pod"), (4, "b", "Pod")]
    assert docs[0].line == 2 and docs[0].source == "x.yaml"
    obj, errors = validate(docs[1])
    assert errors == [] and obj is not None
    assert obj.normalized()["spec"]["containers"][0]["resources"]["requests"] == {"cpu": 500}


def test_list_kind_is_flattened() -> None:
    text = textwrap.dedent("""\
        apiVersion: v1
        kind: List
        items:
        - apiVersion: v1
          kind: Node
          metadata: {name: n1}
        - apiVersion: scheduling.k8s.io/v1beta1
          kind: PodGroup
          metadata: {name: pg1}
          spec: {schedulingPolicy: {gang: {minCount: 0}}}
        """)
    docs = parse_documents(text, "list.yaml")
    assert [(d.index, d.item, d.kind) for d in docs] == [(1, 1, "Node"), (1, 2, "PodGroup")]
    _, errors = validate(docs[1])
    assert [str(e) for e in errors] == [
        "error: PodGroup default/pg1: spec.schedulingPolicy.gang.minCount: must be >= 1 (document 1 item 2 of list.yaml)"
    ]


def test_typed_list_kind() -> None:
    text = json.dumps(
        {
            "apiVersion": "v1",
            "kind": "NodeList",
            "items": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}],
        }
    )
    assert [d.name for d in parse_documents(text, "l.json")] == ["n1"]


def test_malformed_yaml_reports_document_and_line() -> None:
    text = POD.format(name="a", cpu=1) + "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: [b\nspec: {}\n"
    with pytest.raises(DocumentParseError) as info:
        parse_documents(text, "bad.yaml")
    err = info.value
    assert err.index == 2
    assert err.line == 16
    assert err.source == "bad.yaml"
    assert str(err).startswith("error: error parsing bad.yaml (document 2, line 16")


def test_streaming_yields_documents_before_the_error() -> None:
    text = POD.format(name="a", cpu=1) + "---\nkey: : bad\n"
    seen = []
    with pytest.raises(DocumentParseError) as info:
        for doc in iter_documents(io.StringIO(text), "s.yaml"):
            seen.append(doc.name)
    assert seen == ["a"]
    assert info.value.line == 12


def test_non_mapping_document_is_an_error() -> None:
    with pytest.raises(DocumentParseError, match="must be an object"):
        parse_documents("- a\n- b\n", "x.yaml")


def test_json_object_and_array() -> None:
    obj = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n"},
        "status": {"capacity": {"cpu": 1.5, "memory": "1Gi"}},
    }
    docs = parse_documents(json.dumps(obj), "n.json")
    node, errors = validate(docs[0])
    assert errors == [] and node is not None
    assert node.normalized()["status"]["capacity"] == {"cpu": 1500, "memory": 1024**3}
    docs = list(iter_documents(io.StringIO("\n  " + json.dumps([obj, obj])), "a.json"))
    assert [d.index for d in docs] == [1, 2]


def test_malformed_json_reports_line() -> None:
    with pytest.raises(DocumentParseError) as info:
        parse_documents('{\n  "kind": "Pod",\n  "x": ,\n}', "b.json")
    assert info.value.line == 3


def test_yaml_numbers_are_exact() -> None:
    docs = parse_documents(POD.format(name="a", cpu=0.1), "x.yaml")
    obj, _ = validate(docs[0])
    assert obj is not None
    assert obj.normalized()["spec"]["containers"][0]["resources"]["requests"] == {"cpu": 100}


@pytest.mark.parametrize(
    ("doc", "field", "fragment"),
    [
        (
            {"apiVersion": "v1", "kind": "Frob", "metadata": {"name": "x"}},
            "kind",
            'no matches for kind "Frob"',
        ),
        (
            {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": {"name": "x"}},
            "apiVersion",
            "podledger serves PodGroup as scheduling.k8s.io/v1beta1",
        ),
        ({"kind": "Pod", "metadata": {"name": "x"}}, "apiVersion", "required value"),
        ({"apiVersion": "v1", "metadata": {"name": "x"}}, "kind", "required value"),
    ],
)
def test_unknown_kind_and_api_version(doc: dict[str, object], field: str, fragment: str) -> None:
    (d,) = parse_documents(json.dumps(doc), "x.json")
    obj, errors = validate(d)
    assert obj is None
    assert len(errors) == 1 and errors[0].field == field and fragment in errors[0].message


def test_ten_documents_one_invalid_is_reported_by_name() -> None:
    docs = [POD.format(name=f"pod-{i}", cpu="100m") for i in range(10)]
    docs[6] = POD.format(name="pod-6", cpu="lots")
    objects, errors = load_objects("---\n".join(docs), "examples/ten.yaml")
    assert len(objects) == 9
    assert [str(e) for e in errors] == [
        "error: Pod default/pod-6: spec.containers[0].resources.requests.cpu: invalid quantity 'lots': "
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' "
        "(document 7 of examples/ten.yaml)"
    ]
    assert errors[0].to_dict()["index"] == 7


def test_field_error_format() -> None:
    err = FieldError(
        "PodGroup",
        "default",
        "pg1",
        "spec.schedulingPolicy.gang.minCount",
        "must be >= 1",
        "examples/x.yaml",
        3,
    )
    assert str(err) == (
        "error: PodGroup default/pg1: spec.schedulingPolicy.gang.minCount: must be >= 1 "
        "(document 3 of examples/x.yaml)"
    )
    assert str(FieldError("Node", None, "n1", "", "bad", "", None)) == "error: Node n1: bad"


def test_iter_path_reads_a_directory_in_order(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_text(POD.format(name="b", cpu=1))
    (tmp_path / "a.yml").write_text(POD.format(name="a", cpu=1))
    (tmp_path / "c.json").write_text(
        json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "c"}})
    )
    (tmp_path / "notes.txt").write_text("ignored")
    docs = list(iter_path(tmp_path))
    assert [d.name for d in docs] == ["a", "b", "c"]
    assert docs[0].source.endswith("a.yml")


def test_large_stream_is_read_incrementally() -> None:
    class CountingReader(io.StringIO):
        reads = 0

        def read(self, size: int | None = -1) -> str:
            CountingReader.reads += 1
            return super().read(size)

    text = "---\n".join(POD.format(name=f"p{i}", cpu=1) for i in range(2000))
    stream = CountingReader(text)
    it = iter_documents(stream, "big.yaml")
    first = next(it)
    assert first.name == "p0"
    assert stream.tell() < len(text)  # not everything was read for the first document
    assert sum(1 for _ in it) == 1999
