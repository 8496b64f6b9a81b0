"""The example cluster parses, validates and admits cleanly (files applied in sorted order)."""

from collections import Counter
from pathlib import Path

from ledger.resources.admission import InMemoryState, admit
from ledger.resources.job import expand_jobs
from ledger.resources.parse import iter_path, validate

CLUSTER = Path(__file__).resolve().parents[2] / "examples" / "cluster"


def test_example_cluster_admits_cleanly() -> None:
    files = sorted(CLUSTER.glob("*.yaml"))
    assert [f.name for f in files] == [
        "00-priorityclasses.yaml",
        "01-nodes.yaml",
        "02-quotas.yaml",
        "10-training.yaml",
        "20-composite.yaml",
        "30-pdb.yaml",
        "40-blocked.yaml",
        "50-job.yaml",
    ]
    state = InMemoryState()
    kinds: Counter[str] = Counter()
    for file in files:
        objects = []
        for doc in iter_path(file):
            obj, errors = validate(doc)
            assert errors == [], [str(e) for e in errors]
            assert obj is not None
            objects.append(obj)
        objects = expand_jobs(objects)[0]  # a Job brings what its controller compiles
        outcome = admit(objects, state)
        assert not outcome.refused, [str(r) for r in outcome.rejected]
        assert all(r.action == "created" for r in outcome.results)
        state.apply(outcome)
        kinds.update(o.KIND for o in objects)
    assert kinds["Node"] == 16
    # 50-job.yaml: one Job, compiled into one Workload, one PodGroup and 4 pods
    assert kinds["Job"] == 1
    assert kinds["PodGroup"] == 7 and kinds["CompositePodGroup"] == 1 and kinds["Workload"] == 2
    assert kinds["ElasticQuota"] == 2 and kinds["PodDisruptionBudget"] >= 1 and kinds["PriorityClass"] == 3

    nodes = [o for (k, _, _), o in state.objects.items() if k == "Node"]
    racks = Counter(n["metadata"]["labels"]["topology.kubernetes.io/rack"] for n in nodes)
    zones = Counter(n["metadata"]["labels"]["topology.kubernetes.io/zone"] for n in nodes)
    assert len(racks) == 4 and set(racks.values()) == {4}
    assert len(zones) == 2
    gpu_nodes = [n for n in nodes if "nvidia.com/gpu" in n["status"]["allocatable"]]
    assert gpu_nodes and all(
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"} in n["spec"]["taints"]
        for n in gpu_nodes
    )

    # priorities resolved by admission: training gangs 1000, everything else from its class or the default
    pretrain = state.objects[("PodGroup", "team-a", "llm-pretrain")]
    assert pretrain["spec"]["priority"] == 1000
    assert pretrain["spec"]["schedulingConstraints"] == {"topology": [{"key": "topology.kubernetes.io/rack"}]}
    pod = state.objects[("Pod", "team-a", "llm-pretrain-0")]
    assert pod["spec"]["priority"] == 1000
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {
        "cpu": 16000,
        "memory": 96 * 1024**3,
        "nvidia.com/gpu": 2,
    }
    decode = state.objects[("PodGroup", "team-b", "pipeline-1-decode")]
    assert decode["spec"]["priority"] == 100 and decode["spec"]["parentCompositePodGroupName"] == "pipeline-1"


def test_reapplying_the_example_cluster_is_a_no_op() -> None:
    state = InMemoryState()
    docs = list(iter_path(CLUSTER))
    objects = [validate(d)[0] for d in docs]
    assert all(o is not None for o in objects)
    first = admit([o for o in objects if o is not None], state)
    assert not first.refused
    state.apply(first)
    again = admit([o for o in objects if o is not None], state)
    assert {r.action for r in again.results} == {"unchanged"}
