"""``batch/v1`` Job with ``.spec.scheduling`` (KEP-5547, building blocks of KEP-6089).

Only what the scheduler needs of a Job: ``parallelism``, ``completions``, ``completionMode``,
``suspend``, the pod template and the scheduling intent. The Job controller's compilation into a
Workload, a PodGroup and pods lives in ``ledger.resources.job``.

Validation follows upstream (``pkg/apis/batch/validation`` plus the declarative rules of the
``scheduling.k8s.io`` building blocks):

* ``parallelism`` / ``completions``: ``must be greater than or equal to 0``;
* ``template.spec.restartPolicy``: ``OnFailure`` or ``Never`` (a Job's pods never restart in
  place: ``Always`` is refused, and an unset policy too, since the pod template's default is
  ``Always``);
* ``scheduling.schedulingPolicy``: exactly one of ``basic`` / ``gang`` when given (absent means
  Basic); ``gang.minCount`` 0 is ``required value``, negative ``must be greater than or equal
  to 1``, and above ``parallelism`` it can never be met, so it is refused at admission;
* ``scheduling.schedulingConstraints`` / ``disruptionMode`` / ``resourceClaims``: the same rules
  as a PodGroup's; ``disruptionMode: {all: {}}`` with a Basic (or absent) policy is refused, as
  the Job controller's workloadbuilder does;
* ``scheduling`` is forbidden together with ``template.spec.schedulingGroup`` (the user's
  PodGroup is authoritative: the controller would compile nothing).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from ledger.resources.models.core import Pod, PodSpec
from ledger.resources.models.meta import Empty, K8sModel, Resource
from ledger.resources.models.scheduling import DisruptionMode, SchedulingConstraints, claims_problems
from ledger.resources.models.values import Problems, check_int32, check_labels, exactly_one_of

RESTART_POLICIES = ("OnFailure", "Never")
# k8s.io/component-helpers/scheduling/schedulingv1/workloadbuilder (validateDisruptionModeCompatibleWithSchedulingPolicy)
MSG_ALL_WITH_BASIC = "the disruptionMode `all` is not supported with the Basic scheduling policy"


class JobGangPolicy(K8sModel):
    min_count: int | None = None  # None: the controller uses spec.parallelism


class JobSchedulingPolicy(K8sModel):
    basic: Empty | None = None
    gang: JobGangPolicy | None = None

    @property
    def is_gang(self) -> bool:
        return self.gang is not None


class JobScheduling(K8sModel):
    """``JobSchedulingConfiguration``: field names mirror the compiled PodGroup's spec."""

    scheduling_policy: JobSchedulingPolicy | None = None
    scheduling_constraints: SchedulingConstraints | None = None
    disruption_mode: DisruptionMode | None = None
    resource_claims: list[dict[str, object]] = Field(default_factory=list)

    def check(self, path: str, parallelism: int) -> Problems:
        problems: Problems = []
        policy = self.scheduling_policy
        if policy is not None:
            union = exactly_one_of(
                f"{path}.schedulingPolicy", {"basic": policy.basic is not None, "gang": policy.is_gang}
            )
            problems += union
            if not union and policy.gang is not None and policy.gang.min_count is not None:
                mpath = f"{path}.schedulingPolicy.gang.minCount"
                minimum = policy.gang.min_count
                if minimum == 0:
                    problems.append((mpath, "required value"))
                elif minimum < 0:
                    problems.append((mpath, "must be greater than or equal to 1"))
                elif minimum > parallelism:
                    problems.append(
                        (
                            mpath,
                            f"invalid value {minimum}: must be less than or equal to spec.parallelism "
                            f"({parallelism}): a gang larger than the Job's pod count can never be "
                            "scheduled",
                        )
                    )
                else:
                    check_int32(mpath, minimum, problems)
        if self.scheduling_constraints is not None:
            problems += self.scheduling_constraints.check(f"{path}.schedulingConstraints")
        if self.disruption_mode is not None:
            union = self.disruption_mode.check(f"{path}.disruptionMode")
            problems += union
            basic = policy is None or not policy.is_gang  # an absent policy is Basic
            if not union and basic and self.disruption_mode.mode == "All":
                problems.append((f"{path}.disruptionMode", MSG_ALL_WITH_BASIC))
        return problems + claims_problems(path, self.resource_claims)


class TemplateMeta(K8sModel):
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


class JobPodSpec(PodSpec):
    restart_policy: str | None = None


class PodTemplateSpec(K8sModel):
    metadata: TemplateMeta = Field(default_factory=TemplateMeta)
    spec: JobPodSpec


class JobSpec(K8sModel):
    parallelism: int | None = None  # upstream default 1
    completions: int | None = None
    completion_mode: Literal["NonIndexed", "Indexed"] | None = None
    suspend: bool | None = None
    backoff_limit: int | None = None
    scheduling: JobScheduling | None = None
    template: PodTemplateSpec


class Job(Resource):
    KIND: ClassVar[str] = "Job"
    spec: JobSpec

    @property
    def parallelism(self) -> int:
        return 1 if self.spec.parallelism is None else self.spec.parallelism

    def check(self) -> Problems:
        problems = super().check()
        spec = self.spec
        for field, value in (
            ("parallelism", spec.parallelism),
            ("completions", spec.completions),
            ("backoffLimit", spec.backoff_limit),
        ):
            if value is not None and value < 0:
                problems.append((f"spec.{field}", "must be greater than or equal to 0"))
            else:
                check_int32(f"spec.{field}", value, problems)
        tmpl = spec.template
        check_labels("spec.template.metadata.labels", tmpl.metadata.labels, problems)
        restart = tmpl.spec.restart_policy
        supported = ", ".join(f'"{p}"' for p in RESTART_POLICIES)
        if not restart:
            problems.append(
                ("spec.template.spec.restartPolicy", f"required value: valid values: {supported}")
            )
        elif restart not in RESTART_POLICIES:
            problems.append(
                (
                    "spec.template.spec.restartPolicy",
                    f'unsupported value "{restart}": supported values: {supported}',
                )
            )
        # the pod template's own rules, reported under spec.template
        pod = Pod.model_construct(
            api_version="v1", kind="Pod", metadata=self.metadata, spec=PodSpec.model_validate(tmpl.spec)
        )
        problems += [
            (f"spec.template.{path}", msg)
            for path, msg in Pod.check(pod)
            if path.startswith("spec.")  # metadata is the Job's, checked above
        ]
        if spec.scheduling is not None:
            if tmpl.spec.scheduling_group is not None:
                problems.append(
                    (
                        "spec.scheduling",
                        "forbidden: may not be set when spec.template.spec.schedulingGroup is set "
                        "(the PodGroup named there is authoritative)",
                    )
                )
            problems += spec.scheduling.check("spec.scheduling", self.parallelism)
        return problems

    @property
    def is_gang(self) -> bool:
        sched = self.spec.scheduling
        return bool(sched and sched.scheduling_policy and sched.scheduling_policy.is_gang)

    @property
    def min_count(self) -> int | None:
        """The compiled gang's ``minCount``: the user's, else ``parallelism`` (at least 1)."""
        sched = self.spec.scheduling
        if not (sched and sched.scheduling_policy and sched.scheduling_policy.gang):
            return None
        given = sched.scheduling_policy.gang.min_count
        return given if given is not None else max(1, self.parallelism)


__all__ = ["Job", "JobScheduling", "JobSpec", "PodTemplateSpec"]
