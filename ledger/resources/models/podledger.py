"""``podledger.io`` SchedulerConfig: scoring, plugin weights, preemption algorithm, backoff, feature gates.

Every field is filled with its default after validation, so the normalized spec is complete.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Self

from pydantic import Field, model_validator

from ledger.resources.models.meta import K8sModel, Resource
from ledger.resources.models.values import Problems, Seconds, dns_subdomain_problem, key_path

FEATURE_GATES = (
    "GenericWorkload",
    "TopologyAwareWorkloadScheduling",
    "CompositePodGroup",
    "PodGroupPreemptionPolicy",
    "WorkloadAwarePreemption",
)
DEFAULT_FEATURE_GATES: dict[str, bool] = dict.fromkeys(FEATURE_GATES, True)
# Gates known but not written into the normalized spec unless set (so that existing
# configurations keep their payloads), with their defaults:
# - SchedulerPreEnqueuePodStatus (KEP-5501, beta, on): a pod that PreEnqueue rejects gets
#   PodScheduled=False with reason NotReadyForScheduling and the plugin's message;
# - PodGroupSatisfiedCondition (KEP-6413, proposed, off): the live PodGroupSatisfied condition.
EXTRA_FEATURE_GATES: dict[str, bool] = {
    "PodGroupSatisfiedCondition": False,
    "SchedulerPreEnqueuePodStatus": True,
}
# Merged into GenericWorkload in 1.37 (KEP-4671): accepted when they agree with it, no effect of their own.
MERGED_FEATURE_GATES = ("GangScheduling", "WorkloadAwarePreemption")
KNOWN_FEATURE_GATES = (*FEATURE_GATES, *EXTRA_FEATURE_GATES, "GangScheduling")
DEFAULT_RESOURCE_WEIGHTS: dict[str, int] = {"cpu": 1, "memory": 1}
DEFAULT_PLUGIN_WEIGHTS: dict[str, int] = {
    "NodeAffinity": 2,
    "NodeResourcesFit": 1,
    "PodGroupPodsCount": 1,
    "TaintToleration": 3,
}
DEFAULT_BACKOFF_INITIAL_SECONDS = 1
DEFAULT_BACKOFF_MAX_SECONDS = 10
DEFAULT_UNSCHEDULABLE_FLUSH_SECONDS = 300


class Backoff(K8sModel):
    initial_seconds: Seconds | None = None
    max_seconds: Seconds | None = None


class SchedulerConfigSpec(K8sModel):
    """Every field is filled with its default after validation: the normalized spec is complete."""

    scoring_strategy: Literal["LeastAllocated", "MostAllocated"] | None = None
    resource_weights: dict[str, int] | None = None  # replaces the default {cpu: 1, memory: 1}
    plugin_weights: dict[str, int] | None = None  # merged over the default weights
    preemption_algorithm: Literal["Default", "ElasticQuota", "Auto", "None"] | None = None
    backoff: Backoff | None = None
    pod_max_in_unschedulable_pods_duration: Seconds | None = None
    feature_gates: dict[str, bool] | None = None  # merged over every gate on
    # left out when unset (100: score every feasible node; 0: upstream's adaptive formula)
    percentage_of_nodes_to_score: int | None = None
    # left out when unset (0, upstream's adaptive limit, KEP-5732; 100: every placement)
    percentage_of_placements_to_score: int | None = None
    # left out when unset: the profile name podledger's scheduler serves (unset: default-scheduler,
    # every pod as before) and whether it emulates controllers (unset: on; ``attach --mode
    # schedule`` turns it off, the cluster's own controllers recreate preempted pods)
    scheduler_name: str | None = None
    controller_emulation: bool | None = None
    # left out when unset: more profile names served beside ``schedulerName`` (``attach --mode
    # shadow``: the cluster's default-scheduler pods and those naming podledger, both decided here)
    additional_scheduler_names: list[str] | None = None

    @model_validator(mode="after")
    def _defaults(self) -> Self:
        if self.scoring_strategy is None:
            self.scoring_strategy = "LeastAllocated"
        self.resource_weights = dict(sorted((self.resource_weights or DEFAULT_RESOURCE_WEIGHTS).items()))
        self.plugin_weights = dict(sorted({**DEFAULT_PLUGIN_WEIGHTS, **(self.plugin_weights or {})}.items()))
        if self.preemption_algorithm is None:
            self.preemption_algorithm = "Auto"
        backoff = self.backoff or Backoff()
        self.backoff = Backoff(
            initial_seconds=DEFAULT_BACKOFF_INITIAL_SECONDS
            if backoff.initial_seconds is None
            else backoff.initial_seconds,
            max_seconds=DEFAULT_BACKOFF_MAX_SECONDS if backoff.max_seconds is None else backoff.max_seconds,
        )
        if self.pod_max_in_unschedulable_pods_duration is None:
            self.pod_max_in_unschedulable_pods_duration = DEFAULT_UNSCHEDULABLE_FLUSH_SECONDS
        user = self.feature_gates or {}
        # a merged gate left out follows GenericWorkload (KEP-4671: merged into it in 1.37)
        generic = bool(user.get("GenericWorkload", True))
        gates = {**DEFAULT_FEATURE_GATES, "WorkloadAwarePreemption": generic, **user}
        self.feature_gates = {g: gates[g] for g in sorted(gates)}
        return self

    def check(self, path: str = "spec") -> Problems:
        problems: Problems = []
        gates = self.feature_gates or {}
        for gate in gates:
            if gate not in KNOWN_FEATURE_GATES:
                problems.append(
                    (
                        f"{path}.featureGates.{gate}",
                        f"unrecognized feature gate {gate!r} (known: {', '.join(KNOWN_FEATURE_GATES)})",
                    )
                )
        generic = gates.get("GenericWorkload", True)
        for gate in MERGED_FEATURE_GATES:
            if gate in gates and gates[gate] != generic:
                problems.append(
                    (
                        f"{path}.featureGates.{gate}",
                        f"{gate} is merged into GenericWorkload since Kubernetes 1.37 and cannot differ from it"
                        f" (GenericWorkload={str(generic).lower()})",
                    )
                )
        for field, weights in (
            ("resourceWeights", self.resource_weights),
            ("pluginWeights", self.plugin_weights),
        ):
            for key, weight in (weights or {}).items():
                if not 0 <= weight <= 100:
                    problems.append((key_path(f"{path}.{field}", key), "must be in the range 0-100"))
        b = self.backoff
        if b is not None and b.initial_seconds is not None and b.max_seconds is not None:
            if b.initial_seconds < 0:
                problems.append((f"{path}.backoff.initialSeconds", "must be >= 0"))
            if b.max_seconds < b.initial_seconds:
                problems.append((f"{path}.backoff.maxSeconds", "must be >= backoff.initialSeconds"))
        for fld, pct in (
            ("percentageOfNodesToScore", self.percentage_of_nodes_to_score),
            ("percentageOfPlacementsToScore", self.percentage_of_placements_to_score),
        ):
            if pct is not None and not 0 <= pct <= 100:
                problems.append((f"{path}.{fld}", "must be in the range 0-100"))
        if self.scheduler_name is not None:
            problem = dns_subdomain_problem(self.scheduler_name)
            if problem:
                problems.append((f"{path}.schedulerName", problem))
        for i, name in enumerate(self.additional_scheduler_names or []):
            problem = dns_subdomain_problem(name)
            if problem:
                problems.append((f"{path}.additionalSchedulerNames[{i}]", problem))
        flush = self.pod_max_in_unschedulable_pods_duration
        if flush is not None and flush < 0:
            problems.append((f"{path}.podMaxInUnschedulablePodsDuration", "must be >= 0"))
        return problems


class SchedulerConfig(Resource):
    KIND: ClassVar[str] = "SchedulerConfig"
    spec: SchedulerConfigSpec = Field(default_factory=SchedulerConfigSpec)

    @model_validator(mode="after")
    def _full_spec(self) -> Self:
        if self.spec.scoring_strategy is None:  # built by the default factory: not validated
            self.spec = SchedulerConfigSpec.model_validate({})
        return self

    def normalized(self) -> dict[str, Any]:
        data = super().normalized()
        data["spec"] = self.spec.normalized()
        return data

    def check(self) -> Problems:
        return super().check() + self.spec.check("spec")
