"""Stored objects back to manifests a user can re-apply.

The ledger stores resource quantities as exact integers in base units (``cpu: 64000`` means 64
cores in millicores). Printed as they are, re-applying them would read ``64000`` as cores, so
every output meant for people or for ``apply`` goes through :func:`to_manifest`, which writes
each quantity in Kubernetes notation (``64``, ``500m``, ``80Gi``) and puts the top-level fields
in the order kubectl prints them. Parsing that output gives back the same integers, so
``get -o yaml | apply -f -`` changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ledger.resources.quantity import format_resources

__all__ = ["to_manifest"]

TOP_LEVEL_ORDER = ("apiVersion", "kind", "metadata", "spec", "status")

# Where each kind keeps resource lists: dotted paths, "[]" walks every item of a list.
RESOURCE_LISTS: dict[str, tuple[str, ...]] = {
    "Node": ("status.capacity", "status.allocatable"),
    "Pod": (
        "spec.containers[].resources.requests",
        "spec.containers[].resources.limits",
        "spec.initContainers[].resources.requests",
        "spec.initContainers[].resources.limits",
        "spec.overhead",
    ),
    "ElasticQuota": ("spec.min", "spec.max"),
    "Job": (
        "spec.template.spec.containers[].resources.requests",
        "spec.template.spec.containers[].resources.limits",
        "spec.template.spec.initContainers[].resources.requests",
        "spec.template.spec.initContainers[].resources.limits",
        "spec.template.spec.overhead",
    ),
    "JobSet": (
        "spec.replicatedJobs[].template.spec.template.spec.containers[].resources.requests",
        "spec.replicatedJobs[].template.spec.template.spec.containers[].resources.limits",
        "spec.replicatedJobs[].template.spec.template.spec.initContainers[].resources.requests",
        "spec.replicatedJobs[].template.spec.template.spec.initContainers[].resources.limits",
        "spec.replicatedJobs[].template.spec.template.spec.overhead",
    ),
}


def _parents(node: Any, steps: list[str]) -> Iterable[dict[str, Any]]:
    """The dicts reached by following ``steps`` (all but the last key of a path)."""
    if not steps:
        if isinstance(node, dict):
            yield node
        return
    step, rest = steps[0], steps[1:]
    many = step.endswith("[]")
    value = node.get(step[:-2] if many else step) if isinstance(node, dict) else None
    for item in (value if isinstance(value, list) else []) if many else [value]:
        yield from _parents(item, rest)


def _format_in_place(holder: dict[str, Any], key: str) -> None:
    value = holder.get(key)
    if isinstance(value, Mapping) and all(isinstance(v, int) for v in value.values()):
        holder[key] = format_resources(value)


def _quota_tree(node: Any) -> None:
    if not isinstance(node, dict):
        return
    for key in ("min", "max"):
        _format_in_place(node, key)
    for child in node.get("children") or []:
        _quota_tree(child)


def to_manifest(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a stored object with quantities in Kubernetes notation and kubectl's field order."""
    import copy

    doc: dict[str, Any] = copy.deepcopy(dict(obj))
    kind = doc.get("kind")
    for path in RESOURCE_LISTS.get(str(kind), ()):
        *steps, last = path.split(".")
        for holder in _parents(doc, steps):
            _format_in_place(holder, last)
    if kind == "ElasticQuotaTree":
        _quota_tree((doc.get("spec") or {}).get("root"))
    ordered = {k: doc.pop(k) for k in TOP_LEVEL_ORDER if k in doc}
    return {**ordered, **doc}
