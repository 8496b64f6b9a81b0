"""Pydantic models of every resource kind, with the upstream (camelCase) field names.

One module per API group: ``meta`` (base classes, ObjectMeta, LabelSelector), ``core``
(v1 Node, Pod), ``scheduling`` (scheduling.k8s.io PriorityClass, Workload, PodGroup,
CompositePodGroup), ``policy`` (PodDisruptionBudget), ``quota`` (ElasticQuota,
ElasticQuotaTree), ``podledger`` (SchedulerConfig); ``values`` holds the field types and value
rules they share, ``registry`` the kind -> model table and ``validate_raw``. This package
exports the public names.

Shape and types are checked by pydantic (strict: a string is not an int, unknown fields are
ignored as kubectl does); value rules that need a precise field path live in each model's
``check()`` and return ``(path, message)`` pairs.

Normalized form (``Resource.normalized()``) is what is stored in events:

* upstream field names; ``apiVersion``, ``kind``, ``metadata`` (``name``, ``namespace`` for
  namespaced kinds, then only non-empty ``labels``, ``annotations``, ``uid``, ``ownerReferences``);
* quantities are exact integers in base units under the upstream key: ``cpu`` in
  **milli-CPU** (``{"cpu": 500}`` = ``500m``), ``memory``/``ephemeral-storage`` in bytes,
  everything else (``pods``, ``nvidia.com/gpu``) as counts; resource maps are key-sorted;
* a field equal to its default is omitted (``tolerations: []``, ``unschedulable: false``,
  toleration ``operator: Equal``...), EXCEPT these defaults which are always written:
  ``metadata.namespace`` (``default``), PodGroup/CompositePodGroup ``spec.disruptionMode``
  (``{"single": {}}``), ``spec.preemptionPolicy`` (``PreemptLowerPriority``) of Pod, PodGroup,
  CompositePodGroup and PriorityClass, Pod ``spec.schedulerName`` (``default-scheduler``),
  Node ``status.allocatable`` (= ``capacity`` when not given), the whole SchedulerConfig spec;
* ``priority``/``priorityClassName`` appear once admission resolved them.

``Model.from_normalized(d).normalized() == d`` for every normalized dict ``d``.
"""

from ledger.resources.models.core import (
    DEFAULT_SCHEDULER_NAME,
    Node,
    Pod,
    effective_requests,
    pod_effective_requests,
)
from ledger.resources.models.meta import ObjectKey, Resource
from ledger.resources.models.podledger import (
    DEFAULT_FEATURE_GATES,
    DEFAULT_PLUGIN_WEIGHTS,
    DEFAULT_RESOURCE_WEIGHTS,
    FEATURE_GATES,
    SchedulerConfig,
    SchedulerConfigSpec,
)
from ledger.resources.models.policy import PodDisruptionBudget
from ledger.resources.models.quota import ElasticQuota, ElasticQuotaTree
from ledger.resources.models.registry import (
    MODELS,
    from_normalized,
    model_for,
    validate_raw,
    validate_scheduler_config_spec,
)
from ledger.resources.models.scheduling import (
    BUILTIN_PRIORITY_CLASSES,
    CompositePodGroup,
    PodGroup,
    PriorityClass,
    Workload,
)
from ledger.resources.models.values import MAX_USER_PRIORITY, PREEMPT_LOWER_PRIORITY

__all__ = [
    "BUILTIN_PRIORITY_CLASSES",
    "DEFAULT_FEATURE_GATES",
    "DEFAULT_PLUGIN_WEIGHTS",
    "DEFAULT_RESOURCE_WEIGHTS",
    "DEFAULT_SCHEDULER_NAME",
    "FEATURE_GATES",
    "MAX_USER_PRIORITY",
    "MODELS",
    "PREEMPT_LOWER_PRIORITY",
    "CompositePodGroup",
    "ElasticQuota",
    "ElasticQuotaTree",
    "Node",
    "ObjectKey",
    "Pod",
    "PodDisruptionBudget",
    "PodGroup",
    "PriorityClass",
    "Resource",
    "SchedulerConfig",
    "SchedulerConfigSpec",
    "Workload",
    "effective_requests",
    "from_normalized",
    "model_for",
    "pod_effective_requests",
    "validate_raw",
    "validate_scheduler_config_spec",
]
