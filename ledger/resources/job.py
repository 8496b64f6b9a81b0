"""The Job controller's compile step (KEP-5547 with KEP-6089's building blocks), as a pure function.

A ``batch/v1`` Job is compiled, when applied, into what the upstream Job controller creates in
order: a ``Workload`` (one PodGroup template, the Job's ``spec.scheduling``), a runtime
``PodGroup`` instantiated from that template, and the Job's pods, each with
``spec.schedulingGroup.podGroupName`` naming the PodGroup. The rules ported from upstream:

* ``spec.scheduling`` absent, or present without ``schedulingPolicy``: a ``basic`` policy (the
  Workload and PodGroup are still created; no all-or-nothing);
* ``gang`` without ``minCount``: ``minCount = parallelism`` (at least 1), resolved here and never
  written back into the Job;
* ``schedulingConstraints``, ``disruptionMode`` and ``resourceClaims`` are copied as given (no
  defaulting: absent means no topology, ``Single`` disruption, no claims);
* a pod template with ``schedulingGroup`` set (bring-your-own PodGroup): nothing is compiled,
  the pods keep that group;
* names: Workload ``<job>-<hash>``, PodGroup ``<workload>-<template>-<hash>``, pods
  ``<job>-<index>-<suffix>`` (Indexed) or ``<job>-<suffix>``, truncated to fit; upstream derives
  the hash from the Job's uid, here from its namespace and name (the ledger fills the uid only
  after admission), so that applying the same Job twice compiles the same objects;
* ``suspend: true``: the Workload only (the PodGroup and pods come on resume);
* ownerReferences: Workload and PodGroup have the Job as controller, the PodGroup also the
  Workload; pods have the Job as controller and the PodGroup. A pod preempted later is recreated
  by ``scheduler/edge/controllers.py`` (its controller reference is the Job).
* pods: ``min(parallelism, completions)`` of them, labelled ``batch.kubernetes.io/job-name`` and
  ``job-name`` and, for Indexed Jobs, ``batch.kubernetes.io/job-completion-index`` (label and
  annotation). Upstream also writes the Job's uid (``controller-uid`` label, ownerReference
  ``uid``); the ledger fills that uid only after admission, and a compiled object must not change
  with it, so it is left out.

Everything is derived from the Job's manifest: the same Job always compiles to the same objects,
so a replay of the log needs no controller at all.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from ledger.resources.jobset import COMPILED_BY as JOBSET_COMPILED_BY
from ledger.resources.jobset import compile_jobset
from ledger.resources.models import Resource, model_for
from ledger.resources.models.batch import Job
from ledger.resources.models.jobset import JobSet

JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
TEMPLATE_NAME = "job"  # the Workload's single PodGroup template
COMPILED_BY = "job-controller"  # the actor of the compiled objects' events
MAX_NAME = 63  # names used as label values stay label-sized
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # the alphabet of Kubernetes' generated name suffixes


def _suffix(seed: str, n: int = 5) -> str:
    digest = int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8], "big")
    out = []
    for _ in range(n):
        digest, i = divmod(digest, len(_ALPHABET))
        out.append(_ALPHABET[i])
    return "".join(out)


def _name(*parts: str, suffix: str) -> str:
    """``part-part-suffix`` within MAX_NAME: the parts are cut, the suffix is kept."""
    room = MAX_NAME - len(suffix) - len(parts)
    each = max(1, room // len(parts))
    cut = [p[:each].rstrip("-.") or p[:1] for p in parts]
    return "-".join([*cut, suffix])


def workload_name(job: Job) -> str:
    return _name(job.name, suffix=_suffix(_identity(job)))


def pod_group_name(job: Job) -> str:
    return _name(workload_name(job), TEMPLATE_NAME, suffix=_suffix(_identity(job) + "/podgroup"))


def _identity(job: Job) -> str:
    # upstream hashes the Job's uid; the ledger fills the uid after admission (and derives it from
    # the stream), so the names here derive from the Job's namespace and name
    return f"{job.metadata.namespace or 'default'}/{job.name}"


def _job_ref(job: Job) -> dict[str, Any]:
    # no uid: the compiled objects must not depend on whether the manifest carried the Job's uid
    # (``get job -o yaml | apply -f -`` must change nothing)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": job.name,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _policy(job: Job) -> dict[str, Any]:
    minimum = job.min_count
    return {"gang": {"minCount": minimum}} if minimum is not None else {"basic": {}}


def _group_fields(job: Job) -> dict[str, Any]:
    """The template fields shared by the Workload's template and the PodGroup."""
    spec = job.normalized()["spec"]
    sched = spec.get("scheduling") or {}
    out: dict[str, Any] = {"schedulingPolicy": _policy(job)}
    for key in ("schedulingConstraints", "resourceClaims", "disruptionMode"):
        if sched.get(key):
            out[key] = sched[key]
    pcn = spec["template"]["spec"].get("priorityClassName")
    if pcn:
        out["priorityClassName"] = pcn
    return out


def compile_job(job: Job) -> list[Resource]:
    """The objects the Job controller creates for ``job``, in creation order."""
    ns = job.metadata.namespace or "default"
    spec = job.normalized()["spec"]
    template = spec["template"]
    pod_spec = dict(template["spec"])
    pod_spec.pop("restartPolicy", None)  # a Pod field the ledger does not model
    out: list[dict[str, Any]] = []
    group: str | None = None
    if not pod_spec.get("schedulingGroup"):  # else bring-your-own PodGroup: nothing to compile
        wl = workload_name(job)
        out.append(
            {
                "apiVersion": "scheduling.k8s.io/v1beta1",
                "kind": "Workload",
                "metadata": {"name": wl, "namespace": ns, "ownerReferences": [_job_ref(job)]},
                "spec": {
                    "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": job.name},
                    "podGroupTemplates": [{"name": TEMPLATE_NAME, **_group_fields(job)}],
                },
            }
        )
        if job.spec.suspend:
            return [_resource(d) for d in out]
        group = pod_group_name(job)
        out.append(
            {
                "apiVersion": "scheduling.k8s.io/v1beta1",
                "kind": "PodGroup",
                "metadata": {
                    "name": group,
                    "namespace": ns,
                    "ownerReferences": [
                        _job_ref(job),
                        {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "name": wl},
                    ],
                },
                "spec": {
                    "workloadRef": {"workloadName": wl, "templateName": TEMPLATE_NAME},
                    **_group_fields(job),
                },
            }
        )
        pod_spec["schedulingGroup"] = {"podGroupName": group}
    elif job.spec.suspend:
        return []
    count = job.parallelism if job.spec.completions is None else min(job.parallelism, job.spec.completions)
    indexed = job.spec.completion_mode == "Indexed"
    tmeta = template.get("metadata") or {}
    for i in range(count):
        suffix = _suffix(f"{_identity(job)}/pod/{i}")
        name = _name(job.name, str(i), suffix=suffix) if indexed else _name(job.name, suffix=suffix)
        labels = {**(tmeta.get("labels") or {}), JOB_NAME_LABEL: job.name, "job-name": job.name}
        annotations = dict(tmeta.get("annotations") or {})
        if indexed:
            labels[COMPLETION_INDEX] = annotations[COMPLETION_INDEX] = str(i)
        refs = [_job_ref(job)]
        if group:
            refs.append({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "name": group})
        meta: dict[str, Any] = {"name": name, "namespace": ns, "labels": labels, "ownerReferences": refs}
        if annotations:
            meta["annotations"] = annotations
        out.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec})
    return [_resource(d) for d in out]


def _resource(data: dict[str, Any]) -> Resource:
    obj = model_for(data["kind"]).from_normalized(data)
    problems = obj.check()
    if problems:  # the Job's own checks cover the template: this is a bug, not bad input
        raise ValueError(f"compiling Job: {obj.ref}: " + "; ".join(f"{p}: {m}" for p, m in problems))
    return obj


def expand_jobs(
    objects: Sequence[Resource],
) -> tuple[list[Resource], dict[tuple[str, str, str], dict[str, str]]]:
    """``objects`` with each Job followed by what the Job controller creates for it (a JobSet by
    what the JobSet controller creates, its Jobs expanded in turn), and per compiled object's key
    the meta of its events: the compiling controller (``actor``) and its owner (``job`` or
    ``jobset``: ``namespace/name``)."""
    out: list[Resource] = []
    owners: dict[tuple[str, str, str], dict[str, str]] = {}
    for obj in objects:
        out.append(obj)
        if isinstance(obj, JobSet):
            children, more = expand_jobs(compile_jobset(obj))
            out.extend(children)
            owner = {"actor": JOBSET_COMPILED_BY, "jobset": f"{obj.metadata.namespace}/{obj.name}"}
            owners.update({c.key: more.get(c.key, owner) for c in children})
        elif isinstance(obj, Job):
            children = compile_job(obj)
            out.extend(children)
            owners.update(
                {
                    c.key: {"actor": COMPILED_BY, "job": f"{obj.metadata.namespace}/{obj.name}"}
                    for c in children
                }
            )
    return out, owners


def owning_job(manifest: dict[str, Any]) -> str | None:
    """``namespace/name`` of the Job named as controller in a manifest's ownerReferences."""
    meta = manifest.get("metadata") or {}
    for ref in meta.get("ownerReferences") or ():
        if (
            ref.get("controller")
            and ref.get("kind") == "Job"
            and str(ref.get("apiVersion", "")).startswith("batch/")
        ):
            return f"{meta.get('namespace') or 'default'}/{ref.get('name')}"
    return None


__all__ = [
    "COMPILED_BY",
    "COMPLETION_INDEX",
    "JOB_NAME_LABEL",
    "TEMPLATE_NAME",
    "compile_job",
    "expand_jobs",
    "owning_job",
    "pod_group_name",
    "workload_name",
]
