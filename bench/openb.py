"""The openb trace's files and how each row becomes a Kubernetes object (used by ``bench.trace``
and ``bench.paper``).

Input: the Alibaba cluster-trace-gpu-v2023 "openb" CSVs (Weng et al., "Beware of
Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent",
USENIX ATC '23; research/study use). The folder comes from ``PODLEDGER_TRACE_DIR``, default
``../shared/data/openb`` next to the repository; nothing is copied into this repository.

Mapping (every object goes through ``load_documents`` validation, admission and the append of
the apply/delete commands, as ``podledger apply`` would):

* node (``sn, cpu_milli, memory_mib, gpu, model``) → ``v1`` Node with allocatable
  ``cpu: <cpu_milli>m``, ``memory: <memory_mib>Mi``, ``nvidia.com/gpu: <gpu>`` (only when
  ``gpu > 0``) and the label ``podledger.io/gpu-model: <model>`` (only when a model is given);
* task → ``v1`` Pod in namespace ``openb`` with one container requesting ``cpu``, ``memory``
  and ``nvidia.com/gpu``;
* QoS → PriorityClass: ``LS`` → ``openb-ls`` (3000), ``Burstable`` → ``openb-burstable``
  (2000), ``BE`` → ``openb-be`` (1000). The trace also has 7 ``Guaranteed`` tasks; they
  get ``openb-ls`` (Kubernetes' Guaranteed QoS is the reserved, latency-sensitive class);
* ``gpu_spec`` (``A|B|...``) → a required node affinity ``podledger.io/gpu-model In [A, B]``;
* time: ``creation_time`` → the pod is applied, ``deletion_time`` → it is deleted (an empty
  deletion time keeps the task to the end). Trace second 0 is the simulation epoch
  2026-01-01T00:00:00Z.

Shared GPUs: a task with ``num_gpu == 1`` and ``gpu_milli < 1000`` holds a share of one GPU.
The core fits scalar resources per node and has no per-device state, so an exact model of GPU
sharing (which GPU of the node has how many milli-GPUs left, FGD's fragmentation) cannot be
expressed. We round the share UP to one whole ``nvidia.com/gpu`` and record the share in the
annotation ``podledger.io/gpu-milli``. This is conservative: every placement is one that real
hardware can honour (a share never lands on a GPU that is not free), it is what Kubernetes does
without a GPU-sharing device plugin, and the extended resource stays the standard one. The
alternative, an aggregate ``podledger.io/gpu-milli`` resource of ``gpu × 1000`` per node, would
admit placements that no GPU can hold (three 600-milli shares on a 2-GPU node fit 1,800 of
2,000 milli but no GPU has room for the third) and would not keep whole-GPU tasks off GPUs that
carry shares. The price of rounding up is overstated GPU use; the report therefore gives both
the whole-GPU allocation and the GPU share actually requested by bound tasks.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TRACE_DIR = ROOT.parent / "shared" / "data" / "openb"
NODE_FILE = "openb_node_list_all_node.csv"
POD_FILE = "openb_pod_list_default.csv"
NAMESPACE = "openb"
GPU = "nvidia.com/gpu"
GPU_MODEL_LABEL = "podledger.io/gpu-model"
GPU_MILLI_ANNOTATION = "podledger.io/gpu-milli"
PRIORITY_CLASSES = {"openb-ls": 3000, "openb-burstable": 2000, "openb-be": 1000}
QOS_CLASS = {"LS": "openb-ls", "Guaranteed": "openb-ls", "Burstable": "openb-burstable", "BE": "openb-be"}
EPOCH = datetime(2026, 1, 1, tzinfo=UTC).timestamp()


# ----------------------------------------------------------------------------- input


def trace_dir() -> Path | None:
    env = os.environ.get("PODLEDGER_TRACE_DIR")
    path = Path(env) if env else DEFAULT_TRACE_DIR
    return path if (path / NODE_FILE).is_file() else None


@dataclass(frozen=True, slots=True)
class NodeRow:
    name: str
    cpu_milli: int
    memory_mib: int
    gpu: int
    model: str


@dataclass(frozen=True, slots=True)
class Task:
    name: str
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    gpu_spec: tuple[str, ...]
    qos: str
    created: int
    deleted: int | None

    @property
    def gpus(self) -> int:
        """Whole GPUs held (a share rounds up to one GPU)."""
        return self.num_gpu

    @property
    def gpu_share_milli(self) -> int:
        """The GPU share actually asked for, in milli-GPUs."""
        if self.num_gpu == 1:
            return self.gpu_milli or 1000
        return self.num_gpu * 1000


def read_nodes(path: Path) -> list[NodeRow]:
    with path.open(newline="") as fh:
        return [
            NodeRow(
                r["sn"],
                int(r["cpu_milli"]),
                int(r["memory_mib"]),
                int(r["gpu"] or 0),
                (r["model"] or "").strip(),
            )
            for r in csv.DictReader(fh)
        ]


def read_tasks(path: Path, limit: int | None = None) -> list[Task]:
    out: list[Task] = []
    with path.open(newline="") as fh:
        for r in csv.DictReader(fh):
            spec = tuple(s.strip() for s in (r.get("gpu_spec") or "").split("|") if s.strip())
            deleted = (r.get("deletion_time") or "").strip()
            out.append(
                Task(
                    name=r["name"],
                    cpu_milli=int(r["cpu_milli"]),
                    memory_mib=int(r["memory_mib"]),
                    num_gpu=int(r["num_gpu"] or 0),
                    gpu_milli=int(r["gpu_milli"] or 0),
                    gpu_spec=spec,
                    qos=(r.get("qos") or "BE").strip(),
                    created=int(r["creation_time"]),
                    deleted=int(deleted) if deleted else None,
                )
            )
            if limit is not None and len(out) >= limit:
                break
    return out


# ----------------------------------------------------------------------------- manifests


def priority_class_manifests() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
            "description": f"openb trace QoS class ({name.removeprefix('openb-')})",
        }
        for name, value in PRIORITY_CLASSES.items()
    ]


def node_manifest(n: NodeRow) -> dict[str, Any]:
    alloc: dict[str, str] = {"cpu": f"{n.cpu_milli}m", "memory": f"{n.memory_mib}Mi"}
    if n.gpu > 0:
        alloc[GPU] = str(n.gpu)
    meta: dict[str, Any] = {"name": n.name}
    if n.model:
        meta["labels"] = {GPU_MODEL_LABEL: n.model}
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "status": {"capacity": alloc}}


def pod_manifest(t: Task) -> dict[str, Any]:
    requests: dict[str, str] = {"cpu": f"{t.cpu_milli}m", "memory": f"{t.memory_mib}Mi"}
    meta: dict[str, Any] = {"name": t.name, "namespace": NAMESPACE}
    if t.num_gpu > 0:
        requests[GPU] = str(t.gpus)
        if t.num_gpu == 1 and 0 < t.gpu_milli < 1000:
            meta["annotations"] = {GPU_MILLI_ANNOTATION: str(t.gpu_milli)}
    spec: dict[str, Any] = {
        "containers": [{"name": "task", "resources": {"requests": requests}}],
        "priorityClassName": QOS_CLASS.get(t.qos, "openb-be"),
    }
    if t.gpu_spec:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": GPU_MODEL_LABEL, "operator": "In", "values": list(t.gpu_spec)}
                            ]
                        }
                    ]
                }
            }
        }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def load(manifests: list[dict[str, Any]], source: str) -> list[Any]:
    """Validate manifests exactly as ``podledger apply`` does; raise on any error."""
    from api.services.objects import load_documents
    from ledger.resources.parse import Document

    docs = [Document(index=i + 1, source=source, raw=raw) for i, raw in enumerate(manifests)]
    objects, errors = load_documents(docs)
    if errors:
        raise RuntimeError(f"{source}: {len(errors)} invalid manifests, first: {errors[0]}")
    return objects


# ----------------------------------------------------------------------------- replay
