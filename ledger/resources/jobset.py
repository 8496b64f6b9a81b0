"""The JobSet controller's compile step (kubernetes-sigs/jobset KEP-969, the alpha implementation
in ``pkg/controllers/scheduling.go`` and ``workload_builder.go``), as a pure function, in the shape
of the Job controller's (``ledger.resources.job``).

A JobSet is compiled, when applied, into what the JobSet controller creates: with
``spec.scheduling``, one ``Workload`` and its ``PodGroup`` s, then the child ``batch/v1`` Jobs
(``<jobset>-<replicatedjob>-<index>``), whose pod templates name their PodGroup in
``schedulingGroup`` (so the Job controller compiles each into its pods and nothing else). The
rules ported from upstream:

* top-level mode (no ``replicatedJobs`` entries, no sequenced startup): one PodGroup template for
  the whole JobSet; a gang's ``minCount`` is the represented pod count, the sum of
  ``parallelism x replicas`` (the JobSet-level policy carries its variant only);
* per-ReplicatedJob mode (``replicatedJobs`` entries, or DependsOn / InOrder startup): one
  template per entry (its targets share it; ``minCount`` sums theirs) and one per ReplicatedJob no
  entry targets (the top-level fields as its defaults); an entry with ``job``: one template per
  Job replica, a gang's ``minCount`` defaulting to the Job's parallelism;
* absent ``schedulingPolicy``: gang; ``priorityClassName``: the (first) ReplicatedJob's pod
  template's; constraints and disruption mode copied as given, job-level resource claims too;
* names: Workload ``<jobset>-<hash>`` (hash: 10 hex digits of the SHA-1 of ``JobSet/<ns>/<name>``);
  templates ``<jobset>-<hash>`` (top level), ``<replicatedjob>-<hash>``, ``<target>-<target>-<hash>``,
  ``<replicatedjob>-<index>-<hash>``, each hashing its source's kind and identity; PodGroups take
  the top-level template's name, else ``<jobset>-<template>`` (over 63 characters: the JobSet's
  name cut and a hash of ``<jobset>/<template>``);
* ``suspend: true``: no Workload or PodGroups (upstream deletes them on suspend and recreates them
  on resume), the Jobs suspended (so without pods);
* the Workload, PodGroups and Jobs have the JobSet as controller and the label
  ``jobset.sigs.k8s.io/jobset-name``; Jobs also the ReplicatedJob's name, their index and the
  annotation ``scheduling.k8s.io/group-template-name``.

Upstream's alpha compiles no CompositePodGroup: KEP-969 leaves the CompositePodGroup-backed
"gang of gangs" hierarchy to its next stage, so a JobSet's PodGroups are independent groups.
Startup order is not modelled (every Job is compiled at once; podledger has no Job readiness).
"""

from __future__ import annotations

import hashlib
from typing import Any

from ledger.resources.models import Resource, model_for
from ledger.resources.models.jobset import JobSet, ReplicatedJob, ReplicatedJobScheduling

API_VERSION = "jobset.x-k8s.io/v1alpha2"
JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_NAME = "jobset.sigs.k8s.io/replicatedjob-name"
JOB_INDEX = "jobset.sigs.k8s.io/job-index"
GROUP_TEMPLATE_NAME = "scheduling.k8s.io/group-template-name"
COMPILED_BY = "jobset-controller"
MAX_NAME = 63
HASH_LEN = 10


def _sha1(text: str) -> str:
    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()


def _identity_hash(kind: str, namespace: str, name: str) -> str:
    return _sha1(f"{kind}/{namespace}/{name}")[:HASH_LEN]


def _hashed(prefix: str, digest: str) -> str:
    name = f"{prefix}-{digest}"
    return name if len(name) <= MAX_NAME else f"{prefix[: MAX_NAME - 1 - len(digest)]}-{digest}"


def _ns(js: JobSet) -> str:
    return js.metadata.namespace or "default"


def workload_name(js: JobSet) -> str:
    return _hashed(js.name, _identity_hash("JobSet", _ns(js), js.name))


def top_level(js: JobSet) -> bool:
    s = js.spec.scheduling
    return s is not None and not s.replicated_jobs and not js.sequenced


def pod_group_name(js: JobSet, template: str) -> str:
    if top_level(js):
        return template
    name = f"{js.name}-{template}"
    if len(name) <= MAX_NAME:
        return name
    prefix = js.name[: MAX_NAME - 1 - HASH_LEN]
    return f"{prefix}-{_sha1(f'{js.name}/{template}')[:HASH_LEN]}"


def _jobset_ref(js: JobSet) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "JobSet",
        "name": js.name,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _fields(
    policy: str | None,
    min_count: int,
    constraints: Any,
    disruption: Any,
    claims: list[dict[str, object]] | None = None,
    explicit_min: int | None = None,
) -> dict[str, Any]:
    """A template's scheduling fields: ``policy`` is ``basic`` or ``gang`` (None: gang)."""
    out: dict[str, Any] = {
        "schedulingPolicy": {"basic": {}}
        if policy == "basic"
        else {"gang": {"minCount": explicit_min if explicit_min is not None else min_count}}
    }
    if constraints is not None:
        out["schedulingConstraints"] = constraints.normalized()
    if claims:
        out["resourceClaims"] = claims
    if disruption is not None:
        out["disruptionMode"] = disruption.normalized()
    return out


class _Item:
    """One PodGroup template: its name, fields and the (ReplicatedJob, Job index) pairs it holds."""

    def __init__(
        self, name: str, fields: dict[str, Any], pcn: str | None, jobs: list[tuple[str, int]]
    ) -> None:
        self.name = name
        self.fields = {**fields, **({"priorityClassName": pcn} if pcn else {})}
        self.jobs = jobs


def _items(js: JobSet) -> list[_Item]:
    s = js.spec.scheduling
    assert s is not None
    ns = _ns(js)
    top = s.scheduling_policy.variant if s.scheduling_policy is not None else None
    rjs = js.spec.replicated_jobs

    def every_job(rj: ReplicatedJob) -> list[tuple[str, int]]:
        return [(rj.name, i) for i in range(rj.count)]

    if top_level(js):
        name = _hashed(js.name, _identity_hash("JobSet", ns, js.name))
        fields = _fields(top, sum(rj.pods for rj in rjs), s.scheduling_constraints, s.disruption_mode)
        return [_Item(name, fields, rjs[0].priority_class_name, [j for rj in rjs for j in every_job(rj)])]
    by_name = {rj.name: rj for rj in rjs}
    out: list[_Item] = []
    grouped: set[str] = set()
    for entry in s.replicated_jobs:
        members = [by_name[t] for t in entry.target_replicated_jobs if t in by_name]
        grouped.update(rj.name for rj in members)
        if members:
            out += _entry_items(js, entry, members, s.scheduling_policy, s)
    for rj in rjs:
        if rj.name in grouped:
            continue
        name = _hashed(rj.name, _identity_hash("ReplicatedJob", ns, f"{js.name}/{rj.name}"))
        fields = _fields(top, rj.pods, s.scheduling_constraints, s.disruption_mode)
        out.append(_Item(name, fields, rj.priority_class_name, every_job(rj)))
    return out


def _entry_items(
    js: JobSet, entry: ReplicatedJobScheduling, members: list[ReplicatedJob], top: Any, s: Any
) -> list[_Item]:
    ns = _ns(js)
    if entry.job is not None:  # one PodGroup per Job replica
        rj, job = members[0], entry.job
        pol = job.scheduling_policy
        variant = None if pol is None else ("basic" if pol.basic is not None else "gang")
        if pol is None and top is not None:
            variant = top.variant
        explicit = pol.gang.min_count if pol is not None and pol.gang is not None else None
        items = []
        for i in range(rj.count):
            name = _hashed(f"{rj.name}-{i}", _identity_hash("Job", ns, f"{js.name}/{rj.name}/{i}"))
            fields = _fields(
                variant,
                rj.parallelism,
                job.scheduling_constraints or s.scheduling_constraints,
                job.disruption_mode or s.disruption_mode,
                job.resource_claims,
                explicit,
            )
            items.append(_Item(name, fields, rj.priority_class_name, [(rj.name, i)]))
        return items
    group = "-".join(entry.target_replicated_jobs)
    name = _hashed(group, _identity_hash("ReplicatedJobGroup", ns, f"{js.name}/{group}"))
    leaf = entry.scheduling_policy or top
    fields = _fields(
        leaf.variant if leaf is not None else None,
        sum(rj.pods for rj in members),
        entry.scheduling_constraints or s.scheduling_constraints,
        entry.disruption_mode or s.disruption_mode,
    )
    jobs = [(rj.name, i) for rj in members for i in range(rj.count)]
    return [_Item(name, fields, members[0].priority_class_name, jobs)]


def compile_jobset(js: JobSet) -> list[Resource]:
    """The objects the JobSet controller creates for ``js``, in creation order (its Jobs' pods
    come from the Job controller: ``ledger.resources.job``)."""
    ns = _ns(js)
    labels = {JOBSET_NAME: js.name}
    out: list[dict[str, Any]] = []
    template_of: dict[tuple[str, int], str] = {}
    suspended = bool(js.spec.suspend)
    if js.spec.scheduling is not None:
        items = _items(js)
        wl = workload_name(js)
        for item in items:
            template_of.update(dict.fromkeys(item.jobs, item.name))
        if not suspended:
            out.append(
                {
                    "apiVersion": "scheduling.k8s.io/v1beta1",
                    "kind": "Workload",
                    "metadata": {
                        "name": wl,
                        "namespace": ns,
                        "labels": labels,
                        "ownerReferences": [_jobset_ref(js)],
                    },
                    "spec": {
                        "controllerRef": {"apiGroup": "jobset.x-k8s.io", "kind": "JobSet", "name": js.name},
                        "podGroupTemplates": [{"name": it.name, **it.fields} for it in items],
                    },
                }
            )
            for it in items:
                out.append(
                    {
                        "apiVersion": "scheduling.k8s.io/v1beta1",
                        "kind": "PodGroup",
                        "metadata": {
                            "name": pod_group_name(js, it.name),
                            "namespace": ns,
                            "labels": labels,
                            "ownerReferences": [_jobset_ref(js)],
                        },
                        "spec": {"workloadRef": {"workloadName": wl, "templateName": it.name}, **it.fields},
                    }
                )
    for rj in js.spec.replicated_jobs:
        tmpl = rj.template.normalized()
        for i in range(rj.count):
            spec = dict(tmpl["spec"])
            pod_tmpl = dict(spec["template"])
            template = template_of.get((rj.name, i))
            annotations = dict((tmpl.get("metadata") or {}).get("annotations") or {})
            if template is not None:
                pod_spec = dict(pod_tmpl["spec"])
                pod_spec["schedulingGroup"] = {"podGroupName": pod_group_name(js, template)}
                pod_tmpl["spec"] = pod_spec
                annotations[GROUP_TEMPLATE_NAME] = template
            spec["template"] = pod_tmpl
            if suspended:
                spec["suspend"] = True
            meta: dict[str, Any] = {
                "name": f"{js.name}-{rj.name}-{i}",
                "namespace": ns,
                "labels": {
                    **((tmpl.get("metadata") or {}).get("labels") or {}),
                    **labels,
                    REPLICATED_JOB_NAME: rj.name,
                    JOB_INDEX: str(i),
                },
                "ownerReferences": [_jobset_ref(js)],
            }
            if annotations:
                meta["annotations"] = annotations
            out.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": spec})
    return [_resource(d) for d in out]


def _resource(data: dict[str, Any]) -> Resource:
    obj = model_for(data["kind"]).from_normalized(data)
    problems = obj.check()
    if problems:  # the JobSet's own checks cover its templates: this is a bug, not bad input
        raise ValueError(f"compiling JobSet: {obj.ref}: " + "; ".join(f"{p}: {m}" for p, m in problems))
    return obj


__all__ = [
    "COMPILED_BY",
    "GROUP_TEMPLATE_NAME",
    "JOBSET_NAME",
    "compile_jobset",
    "pod_group_name",
    "workload_name",
]
