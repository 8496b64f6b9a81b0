"""Priority admission (docs/semantics.md §2.6 and §9; built-in classes: DESIGN §2).

A new Pod, PodGroup or CompositePodGroup gets ``priorityClassName``, ``priority`` and
``preemptionPolicy``: the named PriorityClass (the built-ins ``system-cluster-critical`` and
``system-node-critical`` always exist), else the ``globalDefault`` class with the smallest
value, else priority 0. An unknown class, or a preset ``priority`` that differs from the class
value, is rejected. ``preemptionPolicy`` comes from the class when unset (default
``PreemptLowerPriority``). Updates resolve nothing: the fields are immutable (``immutability``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ledger.resources.admission.outcome import Rejection
from ledger.resources.admission.state import Batch
from ledger.resources.models import (
    BUILTIN_PRIORITY_CLASSES,
    PREEMPT_LOWER_PRIORITY,
    CompositePodGroup,
    Pod,
    PodGroup,
)

_SPEC_WORDS = {
    "Pod": "pod spec",
    "PodGroup": "pod group spec",
    "CompositePodGroup": "composite pod group spec",
}


def admit_priority(
    obj: Pod | PodGroup | CompositePodGroup, batch: Batch
) -> tuple[Pod | PodGroup | CompositePodGroup, list[Rejection]]:
    """The new object with its priority fields filled in, and the reasons to reject it."""
    spec = obj.spec
    name, value, policy, reasons = resolve_priority(
        obj.KIND, spec.priority_class_name, spec.priority, spec.preemption_policy, batch
    )
    update = {"priority_class_name": name, "priority": value, "preemption_policy": policy}
    return obj.model_copy(update={"spec": spec.model_copy(update=update)}), reasons


def resolve_priority(
    kind: str, class_name: str | None, priority: int | None, policy: str | None, batch: Batch
) -> tuple[str | None, int, str, list[Rejection]]:
    """Priority admission for a new object: ``(priorityClassName, priority, preemptionPolicy, reasons)``."""
    pc: Mapping[str, Any] | None
    if class_name:
        pc = _priority_class(batch, class_name)
        if pc is None:
            return (
                class_name,
                priority or 0,
                policy or PREEMPT_LOWER_PRIORITY,
                [Rejection("spec.priorityClassName", f'no PriorityClass with name "{class_name}" was found')],
            )
    else:
        pc = _default_priority_class(batch)
        class_name = str(pc["metadata"]["name"]) if pc is not None else None
    value = int(pc["value"]) if pc is not None else 0
    reasons: list[Rejection] = []
    if priority is not None and priority != value:
        source = f'the PriorityClass "{class_name}"' if class_name else "no PriorityClass (default 0)"
        reasons.append(
            Rejection(
                "spec.priority",
                f"the integer value of priority ({priority}) must not be provided in {_SPEC_WORDS[kind]}; "
                f"priority admission controller computed {value} from {source}",
            )
        )
    if policy is None:
        policy = (
            str(pc.get("preemptionPolicy") or PREEMPT_LOWER_PRIORITY)
            if pc is not None
            else PREEMPT_LOWER_PRIORITY
        )
    return class_name, value, policy, reasons


def _priority_class(batch: Batch, name: str) -> Mapping[str, Any] | None:
    if name in BUILTIN_PRIORITY_CLASSES:
        return BUILTIN_PRIORITY_CLASSES[name]
    return batch.get("PriorityClass", "", name)


def _default_priority_class(batch: Batch) -> Mapping[str, Any] | None:
    defaults = [pc for pc in batch.list("PriorityClass") if pc.get("globalDefault")]
    if not defaults:
        return None
    return min(defaults, key=lambda pc: (int(pc["value"]), str(pc["metadata"]["name"])))
