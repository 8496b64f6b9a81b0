"""The openb trace replay (bench/trace.py) on a tiny synthetic trace, and the command
``delete_objects``.

No trace data is used or copied here: the CSVs are written by the test in the openb format.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from api.services.commands import objects as commands
from api.services.objects import list_objects, load_documents
from bench import openb, trace
from ledger.database import Database
from ledger.resources.parse import Document
from ledger.sql import scalar
from tests.ledger_helpers import apply, delete

NODES = """sn,cpu_milli,memory_mib,gpu,model
n-cpu,8000,16384,0,
n-a,16000,65536,2,A
n-b,16000,65536,1,B
"""

# t0: shared GPU (460 milli) + CPU task; t10: a task that must run on model B; t20: the first
# task ends and a whole-GPU task arrives; t30: a task created and deleted in the same second;
# t40: a task without deletion time; a Guaranteed task at t50.
PODS = """name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
p-share,4000,4096,1,460,,LS,Running,0,20,0
p-cpu,2000,2048,0,0,,BE,Running,0,40,0
p-b,2000,2048,1,1000,B,Burstable,Running,10,50,10
p-two,4000,4096,2,1000,A|C,LS,Running,20,60,20
p-blink,1000,1024,0,0,,BE,Failed,30,30,30
p-forever,1000,1024,0,0,,BE,Running,40,,40
p-guar,1000,1024,0,0,,Guaranteed,Running,50,70,50
"""


@pytest.fixture()
def trace_dir(tmp_path: Path, server_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / trace.NODE_FILE).write_text(NODES)
    (tmp_path / trace.POD_FILE).write_text(PODS)
    monkeypatch.setenv("PODLEDGER_DATABASE_URL", server_url)
    monkeypatch.setenv("PODLEDGER_TRACE_DIR", str(tmp_path))
    yield tmp_path


def test_manifests_map_the_trace_and_pass_validation(tmp_path: Path) -> None:
    (tmp_path / trace.NODE_FILE).write_text(NODES)
    (tmp_path / trace.POD_FILE).write_text(PODS)
    nodes = openb.read_nodes(tmp_path / trace.NODE_FILE)
    tasks = {t.name: t for t in openb.read_tasks(tmp_path / trace.POD_FILE)}
    assert tasks["p-forever"].deleted is None and tasks["p-two"].gpu_spec == ("A", "C")
    node = openb.node_manifest(nodes[1])
    assert node["status"]["capacity"] == {"cpu": "16000m", "memory": "65536Mi", "nvidia.com/gpu": "2"}
    assert node["metadata"]["labels"] == {openb.GPU_MODEL_LABEL: "A"}
    assert "labels" not in openb.node_manifest(nodes[0])["metadata"]
    share = openb.pod_manifest(tasks["p-share"])
    assert share["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] == "1"
    assert share["metadata"]["annotations"] == {openb.GPU_MILLI_ANNOTATION: "460"}
    assert share["spec"]["priorityClassName"] == "openb-ls"
    two = openb.pod_manifest(tasks["p-two"])
    term = two["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["A", "C"]
    assert openb.pod_manifest(tasks["p-guar"])["spec"]["priorityClassName"] == "openb-ls"
    assert (
        "nvidia.com/gpu"
        not in openb.pod_manifest(tasks["p-cpu"])["spec"]["containers"][0]["resources"]["requests"]
    )
    objects = trace.load(
        trace.priority_class_manifests()
        + [openb.node_manifest(n) for n in nodes]
        + [openb.pod_manifest(t) for t in tasks.values()],
        "test",
    )
    assert len(objects) == 3 + 3 + 7


@pytest.mark.parametrize("group", [True, False], ids=["group-commit", "unit-per-request"])
def test_replay_runs_the_trace_through_the_ledger(
    trace_dir: Path, monkeypatch: pytest.MonkeyPatch, group: bool
) -> None:
    monkeypatch.setattr(trace, "GROUP", group)
    o = trace.replay(trace_dir)
    assert o.check == "ok"
    assert o.tasks == 7 and o.binds == 7 and o.ever_bound == 1.0 and o.pending_at_end == 0
    assert o.placements["openb/p-b"] == "n-b"  # gpu_spec B
    assert o.placements["openb/p-two"] == "n-a"  # 2 GPUs of model A (C does not exist)
    assert o.placements["openb/p-cpu"] in {"n-cpu", "n-a", "n-b"}
    # at the end only p-forever is left: 1000m of 40000m CPU, no GPU
    assert o.final_cpu == pytest.approx(1000 / 40000)
    assert o.final_gpu == 0.0
    # peak: p-b (1 GPU) + p-two (2 GPUs) while p-share was deleted at t20 = 3 of 3 GPUs
    assert o.peak_gpu == pytest.approx(1.0)
    assert o.events > 0 and o.rss_mb > 0
    assert o.commits == (o.steps + 1 if group else 0)  # one per trace timestamp and the setup


def test_main_writes_results(trace_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path_factory) -> None:
    results = tmp_path_factory.mktemp("results")
    monkeypatch.setattr("bench.common.RESULTS", results)
    trace.main()
    data = (results / "trace.json").read_text()
    assert '"trace replay wall time"' in data and '"wall <= 60 s"' in data


def test_main_skips_without_a_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PODLEDGER_TRACE_DIR", str(tmp_path / "missing"))
    monkeypatch.setattr("bench.common.RESULTS", tmp_path / "results")
    trace.main()
    assert "skipped" in capsys.readouterr().out
    assert not (tmp_path / "results").exists()


def _pod(name: str) -> Document:
    raw = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
    }
    return Document(index=1, source="test", raw=raw)


def test_delete_objects_is_one_append_and_all_or_nothing(database: Database) -> None:
    objects, errors = load_documents([_pod("a"), _pod("b"), _pod("c")])
    assert not errors
    apply(database, objects)
    with pytest.raises(LookupError, match='Pod "ns/zz" not found'), database.unit_of_work() as uow:
        commands.delete_objects(uow, [("Pod", "ns", "a"), ("Pod", "ns", "zz")])
        uow.commit()
    stored = delete(database, [("Pod", "ns", "a"), ("Pod", "ns", "b")], idempotency_key="k")
    assert [(e.stream, e.type, e.version) for e in stored] == [
        ("pod/ns/a", "PodDeleted", 2),
        ("pod/ns/b", "PodDeleted", 2),
    ]
    assert stored[0].data == {"kind": "Pod", "namespace": "ns", "name": "a"}
    with database.connect() as conn:
        assert [r.name for r in list_objects(conn, "Pod")] == ["c"]
        deleted = scalar(conn, "SELECT count(*) FROM events WHERE type = 'PodDeleted'")
    assert deleted == 2
    # a repeated request names objects that are gone: refused like `delete_object`
    with pytest.raises(LookupError):
        delete(database, [("Pod", "ns", "a"), ("Pod", "ns", "b")], idempotency_key="k")
