"""``jobset.x-k8s.io/v1alpha2`` JobSet with ``spec.scheduling`` (kubernetes-sigs/jobset KEP-969,
"Workload-Aware Scheduling Integration"), as far as the scheduler needs it: the ReplicatedJobs
(``name``, ``replicas``, a ``batch/v1`` Job template), ``suspend``, the startup order and the
scheduling intent. The JobSet controller's compilation lives in ``ledger.resources.jobset``.

``spec.scheduling`` is one of two models (KEP-969's webhook rules, checked here):

* top level: ``schedulingPolicy`` (``basic`` or ``gang``; absent = gang),
  ``schedulingConstraints``, ``disruptionMode`` for the whole JobSet;
* per ReplicatedJob: ``replicatedJobs`` entries, each naming its ``targetReplicatedJobs``
  (several share one PodGroup) with their own policy, constraints, disruption mode and resource
  claims, or with ``job`` (one PodGroup per Job replica, the "gang of gangs" per-Job model).

Both together are refused (``cannot set schedulingPolicy, schedulingConstraints, or
disruptionMode together with replicatedJobs``); with ``replicatedJobs`` every ReplicatedJob is
targeted exactly once; ``job`` targets exactly one ReplicatedJob and excludes the entry's own
policy fields; an explicit ``job.schedulingPolicy.gang.minCount`` is at most the Job's
parallelism; one Workload holds at most 8 PodGroup templates; one PodGroup's ReplicatedJobs share
one ``priorityClassName``; and a JobSet with ``spec.scheduling`` may not carry a Job template's
own ``scheduling`` or ``schedulingGroup`` (the JobSet's PodGroups are authoritative).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from ledger.resources.models.batch import Job, JobSchedulingPolicy, JobSpec, TemplateMeta
from ledger.resources.models.meta import Empty, K8sModel, ObjectMeta, Resource
from ledger.resources.models.scheduling import DisruptionMode, SchedulingConstraints, claims_problems
from ledger.resources.models.values import Problems, check_int32, check_name, exactly_one_of

MAX_POD_GROUP_TEMPLATES = 8  # upstream's WorkloadMaxPodGroupTemplates
MAX_ENTRIES = 50  # replicatedJobs entries and targetReplicatedJobs items (kubebuilder MaxItems)
MSG_BOTH_MODELS = (
    "cannot set schedulingPolicy, schedulingConstraints, or disruptionMode together with replicatedJobs"
)


class CompositeGang(K8sModel):
    min_group_count: int | None = None  # the alpha carries the variant only (minCount is derived)


class CompositePolicy(K8sModel):
    """A JobSet- or ReplicatedJob-level policy: only its variant reaches the PodGroup."""

    basic: Empty | None = None
    gang: CompositeGang | None = None

    def check(self, path: str) -> Problems:
        return exactly_one_of(path, {"basic": self.basic is not None, "gang": self.gang is not None})

    @property
    def variant(self) -> Literal["basic", "gang"]:
        return "basic" if self.basic is not None else "gang"


def _shape_problems(
    path: str,
    policy: CompositePolicy | JobSchedulingPolicy | None,
    constraints: SchedulingConstraints | None,
    disruption: DisruptionMode | None,
    claims: list[dict[str, object]] | None = None,
) -> Problems:
    problems: Problems = []
    if policy is not None:
        if isinstance(policy, CompositePolicy):
            problems += policy.check(f"{path}.schedulingPolicy")
        else:
            problems += exactly_one_of(
                f"{path}.schedulingPolicy", {"basic": policy.basic is not None, "gang": policy.is_gang}
            )
    if constraints is not None:
        problems += constraints.check(f"{path}.schedulingConstraints")
    if disruption is not None:
        problems += disruption.check(f"{path}.disruptionMode")
    if claims is not None:
        problems += claims_problems(path, claims)
    return problems


class JobLevelScheduling(K8sModel):
    """``job``: every Job replica of the targeted ReplicatedJob is its own PodGroup."""

    scheduling_policy: JobSchedulingPolicy | None = None
    scheduling_constraints: SchedulingConstraints | None = None
    disruption_mode: DisruptionMode | None = None
    resource_claims: list[dict[str, object]] = Field(default_factory=list)


class ReplicatedJobScheduling(K8sModel):
    target_replicated_jobs: list[str] = Field(default_factory=list)
    scheduling_policy: CompositePolicy | None = None
    scheduling_constraints: SchedulingConstraints | None = None
    disruption_mode: DisruptionMode | None = None
    resource_claims: list[dict[str, object]] = Field(default_factory=list)
    job: JobLevelScheduling | None = None


class JobSetScheduling(K8sModel):
    scheduling_policy: CompositePolicy | None = None
    scheduling_constraints: SchedulingConstraints | None = None
    disruption_mode: DisruptionMode | None = None
    replicated_jobs: list[ReplicatedJobScheduling] = Field(default_factory=list)

    @property
    def top_level_set(self) -> bool:
        return any(
            v is not None for v in (self.scheduling_policy, self.scheduling_constraints, self.disruption_mode)
        )


class JobTemplateSpec(K8sModel):
    metadata: TemplateMeta = Field(default_factory=TemplateMeta)
    spec: JobSpec


class DependsOn(K8sModel):
    name: str
    status: str | None = None


class ReplicatedJob(K8sModel):
    name: str
    replicas: int | None = None  # upstream default 1
    template: JobTemplateSpec
    depends_on: list[DependsOn] = Field(default_factory=list)

    @property
    def count(self) -> int:
        return 1 if self.replicas is None else self.replicas

    @property
    def parallelism(self) -> int:
        p = self.template.spec.parallelism
        return 1 if p is None else p

    @property
    def pods(self) -> int:
        """The represented pod count: ``parallelism x replicas``."""
        return self.parallelism * self.count

    @property
    def priority_class_name(self) -> str | None:
        return self.template.spec.template.spec.priority_class_name or None


class StartupPolicy(K8sModel):
    startup_policy_order: Literal["AnyOrder", "InOrder"] | None = None


class JobSetSpec(K8sModel):
    replicated_jobs: list[ReplicatedJob] = Field(default_factory=list)
    startup_policy: StartupPolicy | None = None
    suspend: bool | None = None
    scheduling: JobSetScheduling | None = None


class JobSet(Resource):
    KIND: ClassVar[str] = "JobSet"
    spec: JobSetSpec

    @property
    def sequenced(self) -> bool:
        """DependsOn or InOrder startup: Jobs come one ReplicatedJob after another."""
        sp = self.spec.startup_policy
        return (sp is not None and sp.startup_policy_order == "InOrder") or any(
            rj.depends_on for rj in self.spec.replicated_jobs
        )

    def job_model(self, rj: ReplicatedJob) -> Job:
        """A ReplicatedJob's template as a Job (for its checks and its compilation)."""
        meta = ObjectMeta(name=f"{self.name}-{rj.name}-0", namespace=self.metadata.namespace)
        return Job.model_construct(api_version="batch/v1", kind="Job", metadata=meta, spec=rj.template.spec)

    def check(self) -> Problems:
        problems = super().check()
        rjs = self.spec.replicated_jobs
        if not rjs:
            problems.append(("spec.replicatedJobs", "required value"))
        seen: set[str] = set()
        for i, rj in enumerate(rjs):
            path = f"spec.replicatedJobs[{i}]"
            check_name(f"{path}.name", rj.name, problems, label=True)
            if rj.name in seen:
                problems.append((f"{path}.name", f'duplicate value: "{rj.name}"'))
            seen.add(rj.name)
            if rj.replicas is not None and rj.replicas < 0:
                problems.append((f"{path}.replicas", "must be greater than or equal to 0"))
            else:
                check_int32(f"{path}.replicas", rj.replicas, problems)
            problems += [
                (f"{path}.template.{p}", m) for p, m in Job.check(self.job_model(rj)) if p.startswith("spec.")
            ]
            for d in rj.depends_on:
                if d.name not in seen:
                    problems.append((f"{path}.dependsOn", f'"{d.name}" is not an earlier ReplicatedJob'))
        if self.spec.scheduling is not None and not problems:
            problems += self._scheduling_problems(self.spec.scheduling)
        return problems

    def _scheduling_problems(self, s: JobSetScheduling) -> Problems:
        base = "spec.scheduling"
        rjs = {rj.name: rj for rj in self.spec.replicated_jobs}
        problems = _shape_problems(base, s.scheduling_policy, s.scheduling_constraints, s.disruption_mode)
        for i, rj in enumerate(self.spec.replicated_jobs):
            tspec = rj.template.spec
            tpath = f"spec.replicatedJobs[{i}].template.spec"
            if tspec.scheduling is not None:
                problems.append(
                    (f"{tpath}.scheduling", "forbidden: may not be set when spec.scheduling is set")
                )
            if tspec.template.spec.scheduling_group is not None:
                problems.append(
                    (
                        f"{tpath}.template.spec.schedulingGroup",
                        "forbidden: may not be set when spec.scheduling is set",
                    )
                )
        if s.replicated_jobs and s.top_level_set:
            problems.append((base, f"forbidden: {MSG_BOTH_MODELS}"))
        if len(s.replicated_jobs) > MAX_ENTRIES:
            problems.append((f"{base}.replicatedJobs", f"must have at most {MAX_ENTRIES} items"))
        targeted: dict[str, str] = {}
        for i, entry in enumerate(s.replicated_jobs):
            epath = f"{base}.replicatedJobs[{i}]"
            problems += _shape_problems(
                epath,
                entry.scheduling_policy,
                entry.scheduling_constraints,
                entry.disruption_mode,
                entry.resource_claims,
            )
            if not entry.target_replicated_jobs:
                problems.append((f"{epath}.targetReplicatedJobs", "required value"))
            elif len(entry.target_replicated_jobs) > MAX_ENTRIES:
                problems.append((f"{epath}.targetReplicatedJobs", f"must have at most {MAX_ENTRIES} items"))
            for j, name in enumerate(entry.target_replicated_jobs):
                tpath = f"{epath}.targetReplicatedJobs[{j}]"
                if name not in rjs:
                    problems.append((tpath, f'not found: "{name}" names no ReplicatedJob'))
                elif name in targeted:
                    problems.append(
                        (tpath, f'duplicate value: "{name}" is already targeted by {targeted[name]}')
                    )
                else:
                    targeted[name] = epath
            if entry.job is not None:
                problems += self._job_level_problems(epath, entry, rjs)
            else:
                problems += self._one_priority(
                    epath, [rjs[n] for n in entry.target_replicated_jobs if n in rjs]
                )
        if s.replicated_jobs:
            for i, rj in enumerate(self.spec.replicated_jobs):
                if rj.name not in targeted:
                    problems.append(
                        (
                            f"{base}.replicatedJobs",
                            f'required value: ReplicatedJob "{rj.name}" (spec.replicatedJobs[{i}]) is targeted by no '
                            "entry, and there is no top-level policy for it to fall back to",
                        )
                    )
        elif not self.sequenced:
            problems += self._one_priority(base, self.spec.replicated_jobs)
        templates = self.template_count()
        if templates > MAX_POD_GROUP_TEMPLATES:
            problems.append(
                (
                    base,
                    f"too many: {templates}: must have at most {MAX_POD_GROUP_TEMPLATES} PodGroup templates",
                )
            )
        return problems

    def _job_level_problems(
        self, epath: str, entry: ReplicatedJobScheduling, rjs: dict[str, ReplicatedJob]
    ) -> Problems:
        job = entry.job
        assert job is not None
        problems: Problems = []
        if len(entry.target_replicated_jobs) != 1:
            problems.append(
                (f"{epath}.targetReplicatedJobs", "must name exactly one ReplicatedJob when job is set")
            )
        for fld, val in (
            ("schedulingPolicy", entry.scheduling_policy),
            ("schedulingConstraints", entry.scheduling_constraints),
            ("disruptionMode", entry.disruption_mode),
            ("resourceClaims", entry.resource_claims or None),
        ):
            if val is not None:
                problems.append((f"{epath}.{fld}", "forbidden: may not be set together with job"))
        jpath = f"{epath}.job"
        problems += _shape_problems(
            jpath, job.scheduling_policy, job.scheduling_constraints, job.disruption_mode, job.resource_claims
        )
        gang = job.scheduling_policy.gang if job.scheduling_policy is not None else None
        target = rjs.get(entry.target_replicated_jobs[0]) if entry.target_replicated_jobs else None
        if gang is not None and gang.min_count is not None and target is not None:
            mpath = f"{jpath}.schedulingPolicy.gang.minCount"
            if gang.min_count < 1:
                problems.append((mpath, "must be greater than or equal to 1"))
            elif gang.min_count > target.parallelism:
                problems.append(
                    (
                        mpath,
                        f"invalid value {gang.min_count}: must be less than or equal to the Job's parallelism "
                        f"({target.parallelism}): a gang larger than the Job's pod count can never be scheduled",
                    )
                )
        return problems

    @staticmethod
    def _one_priority(path: str, members: list[ReplicatedJob]) -> Problems:
        names = sorted({rj.priority_class_name or "" for rj in members})
        if len(names) > 1:
            return [
                (
                    path,
                    "invalid value: the ReplicatedJobs of one PodGroup must share one priorityClassName, got "
                    + ", ".join(f'"{n}"' for n in names),
                )
            ]
        return []

    def template_count(self) -> int:
        """How many PodGroup templates the controller compiles."""
        s = self.spec.scheduling
        if s is None:
            return 0
        if not s.replicated_jobs and not self.sequenced:
            return 1
        rjs = {rj.name: rj for rj in self.spec.replicated_jobs}
        n, grouped = 0, set[str]()
        for entry in s.replicated_jobs:
            members = [rjs[t] for t in entry.target_replicated_jobs if t in rjs]
            grouped.update(rj.name for rj in members)
            if members:
                n += members[0].count if entry.job is not None else 1
        return n + sum(1 for rj in self.spec.replicated_jobs if rj.name not in grouped)


__all__ = ["JobSet", "JobSetScheduling", "ReplicatedJob", "ReplicatedJobScheduling"]
