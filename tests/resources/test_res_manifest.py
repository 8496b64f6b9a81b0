"""Stored objects back to re-appliable manifests (quantities in Kubernetes notation)."""

from __future__ import annotations

import yaml

from ledger.resources.manifest import to_manifest
from ledger.resources.parse import load_objects

TREE = """
apiVersion: scheduling.sigs.k8s.io/v1beta1
kind: ElasticQuotaTree
metadata: {name: tree, namespace: kube-system}
spec:
  root:
    name: root
    min: {cpu: "64", memory: 256Gi, nvidia.com/gpu: "8"}
    children:
    - name: team-a
      min: {cpu: 1500m, nvidia.com/gpu: "8"}
      max: {memory: 1Ti}
      namespaces: [team-a]
"""

POD = """
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec:
  overhead: {cpu: 250m}
  initContainers: [{name: i, resources: {requests: {memory: 512Mi}}}]
  containers: [{name: c, resources: {requests: {cpu: "2", memory: 1G}, limits: {nvidia.com/gpu: "1"}}}]
"""


def _stored(text: str) -> dict:
    objects, errors = load_objects(text)
    assert errors == [] and len(objects) == 1
    (obj,) = objects
    return obj.normalized()


def _round_trip(text: str) -> None:
    stored = _stored(text)
    printed = yaml.safe_dump(to_manifest(stored), sort_keys=False)
    assert _stored(printed) == stored


def test_quota_tree_quantities_at_every_level() -> None:
    stored = _stored(TREE)
    assert stored["spec"]["root"]["min"]["cpu"] == 64000  # stored in millicores
    out = to_manifest(stored)
    root = out["spec"]["root"]
    assert root["min"] == {"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": "8"}
    assert root["children"][0]["min"] == {"cpu": "1500m", "nvidia.com/gpu": "8"}
    assert root["children"][0]["max"] == {"memory": "1Ti"}
    assert stored["spec"]["root"]["min"]["cpu"] == 64000  # the input is not changed
    _round_trip(TREE)


def test_pod_quantities_in_containers_init_containers_and_overhead() -> None:
    out = to_manifest(_stored(POD))
    assert out["spec"]["overhead"] == {"cpu": "250m"}
    assert out["spec"]["initContainers"][0]["resources"]["requests"] == {"memory": "512Mi"}
    assert out["spec"]["containers"][0]["resources"]["requests"] == {
        "cpu": "2",
        "memory": "1000000000",
        "nvidia.com/gpu": "1",  # defaulted from the limit, as upstream does for extended resources
    }
    assert out["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert list(out)[:3] == ["apiVersion", "kind", "metadata"]
    _round_trip(POD)
