"""A ``batch/v1`` Job through the services: applied with its compiled objects in one transaction
(events by the ``job-controller`` actor, naming the Job), scheduled as a gang, explained through
its PodGroup, and deleted together with what it owns (the garbage collector's part)."""

from __future__ import annotations

import copy

from api.services.explain import explain
from api.services.objects import list_objects
from api.services.schedule import schedule_until_idle
from ledger.resources.manifest import to_manifest
from ledger.resources.models import validate_raw
from tests.ledger_helpers import apply, delete_object
from tests.resources.test_res_job import BASE


def _apply(database, *raws):  # type: ignore[no-untyped-def]
    objs = []
    for raw in raws:
        obj, problems = validate_raw(raw["kind"], raw)
        assert not problems, problems
        objs.append(obj)
    res = apply(database, objs, actor="test")
    assert not res.rejected, res.errors
    return res


def test_job_applies_schedules_explains_and_deletes_with_its_objects(database):
    job = copy.deepcopy(BASE)
    job["spec"]["template"]["spec"].pop("priorityClassName")
    job["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "z1"}},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
    }
    res = _apply(database, node, job)
    kinds = [e.type for e in res.events]
    assert kinds == ["NodeCreated", "JobCreated", "WorkloadCreated", "PodGroupCreated"] + ["PodCreated"] * 4
    compiled = [e for e in res.events if e.type not in ("NodeCreated", "JobCreated")]
    assert all(e.meta["actor"] == "job-controller" and e.meta["job"] == "ml/train" for e in compiled)
    assert res.events[1].meta["actor"] == "test"

    schedule_until_idle(database)
    with database.connect() as conn:
        pods = list_objects(conn, "Pod", "ml")
    assert len(pods) == 4 and all(p.status.get("nodeName") == "n1" for p in pods)
    doc = explain(database, "job", "ml", "train")
    assert doc["kind"] == "PodGroup" and doc["job"] == "ml/train"
    assert doc["verdict"].startswith("Scheduled (4/4 pods bound)")

    again = _apply(database, job)  # the same Job again: nothing changes
    assert again.events == []

    delete_object(database, "Job", "ml", "train", actor="test")
    with database.connect() as conn:
        left = conn.execute("SELECT kind, name FROM objects WHERE namespace = 'ml'").fetchall()
    assert left == []


JOBSET = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2",
    "kind": "JobSet",
    "metadata": {"name": "train", "namespace": "ml"},
    "spec": {
        "scheduling": {},
        "replicatedJobs": [
            {
                "name": name,
                "replicas": replicas,
                "template": {
                    "spec": {
                        "parallelism": parallelism,
                        "completions": parallelism,
                        "template": {
                            "spec": {
                                "restartPolicy": "Never",
                                "containers": [
                                    {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}
                                ],
                            }
                        },
                    }
                },
            }
            for name, replicas, parallelism in (("workers", 2, 2), ("driver", 1, 1))
        ],
    },
}


def test_jobset_applies_schedules_as_one_gang_and_deletes_with_its_jobs(database):
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
    }
    res = _apply(database, node, copy.deepcopy(JOBSET))
    kinds = [e.type for e in res.events]
    assert kinds[:4] == ["NodeCreated", "JobSetCreated", "WorkloadCreated", "PodGroupCreated"]
    assert sorted(kinds[4:]) == ["JobCreated"] * 3 + ["PodCreated"] * 5
    assert all(e.meta.get("jobset") == "ml/train" for e in res.events[2:] if e.type != "PodCreated")

    schedule_until_idle(database)
    with database.connect() as conn:
        pods = list_objects(conn, "Pod", "ml")
        (group,) = list_objects(conn, "PodGroup", "ml")
        (stored,) = list_objects(conn, "JobSet", "ml")
    assert len(pods) == 5 and all(p.status.get("nodeName") == "n1" for p in pods)
    assert group.object["spec"]["schedulingPolicy"] == {"gang": {"minCount": 5}}
    # the manifest shown (kubectl get -o yaml) writes quantities as the user did
    shown = to_manifest(stored.object)
    containers = shown["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"]
    assert containers[0]["resources"]["requests"] == {"cpu": "1"}

    delete_object(database, "JobSet", "ml", "train", actor="test")
    with database.connect() as conn:
        left = conn.execute("SELECT kind, name FROM objects WHERE namespace = 'ml'").fetchall()
    assert left == []
