"""Workload template trees (spec/workload-scheduling.md §2.5), checked on create and update.

Exactly one of the two template lists (a CompositePodGroup template needs at least one), at
most 8 templates per list, depth at most 4 and no CompositePodGroup template at depth 4,
template names unique at any depth, no basic PodGroup template under a gang CompositePodGroup
template, no ``single`` disruption mode under an ``all`` parent.
"""

from __future__ import annotations

from collections.abc import Sequence

from ledger.resources.admission.outcome import Rejection
from ledger.resources.models import Workload
from ledger.resources.models.scheduling import CompositePodGroupTemplate, PodGroupTemplate
from ledger.resources.models.values import exactly_one_of

MAX_TEMPLATES = 8
MAX_TREE_DEPTH = 4


def workload_problems(workload: Workload) -> list[Rejection]:
    """Template-tree rules of a Workload (spec §2.5)."""
    spec = workload.spec
    reasons = _list_problems("spec", spec.pod_group_templates, spec.composite_pod_group_templates, root=True)
    seen: dict[str, str] = {}
    for path, depth, template, parent in workload.templates():
        if template.name in seen:
            reasons.append(
                Rejection(
                    f"{path}.name",
                    f'duplicate template name "{template.name}" (already used '
                    f"at {seen[template.name]}; template names must be unique within the "
                    "Workload)",
                )
            )
        else:
            seen[template.name] = path
        if depth > MAX_TREE_DEPTH:
            reasons.append(
                Rejection(
                    path, f"hierarchy depth of {depth} exceeds maximum allowed depth of {MAX_TREE_DEPTH}"
                )
            )
        if isinstance(template, CompositePodGroupTemplate):
            if depth == MAX_TREE_DEPTH:
                reasons.append(
                    Rejection(
                        path,
                        f"a CompositePodGroup template cannot sit at depth "
                        f"{MAX_TREE_DEPTH}: it must have children and the maximum depth is "
                        f"{MAX_TREE_DEPTH}",
                    )
                )
            reasons += _list_problems(
                path, template.pod_group_templates, template.composite_pod_group_templates, root=False
            )
        if parent is not None:
            if (
                isinstance(template, PodGroupTemplate)
                and parent.scheduling_policy.is_gang
                and template.scheduling_policy.basic is not None
            ):
                reasons.append(
                    Rejection(
                        f"{path}.schedulingPolicy",
                        f"a basic PodGroup template cannot be a child of the gang "
                        f'CompositePodGroup template "{parent.name}"',
                    )
                )
            if parent.disruption == "All" and template.disruption == "Single":
                reasons.append(
                    Rejection(
                        f"{path}.disruptionMode",
                        f"disruptionMode single is not allowed under the CompositePodGroup "
                        f'template "{parent.name}" whose disruptionMode is all',
                    )
                )
    return reasons


def _list_problems(
    path: str, pgs: Sequence[PodGroupTemplate], cpgs: Sequence[CompositePodGroupTemplate], *, root: bool
) -> list[Rejection]:
    """The two template lists of the Workload spec (``root``) or of a CompositePodGroup template."""
    reasons: list[Rejection] = []
    if root:
        members = {"podGroupTemplates": bool(pgs), "compositePodGroupTemplates": bool(cpgs)}
        reasons += [Rejection(p, message) for p, message in exactly_one_of(path, members)]
    elif not pgs and not cpgs:
        reasons.append(
            Rejection(
                path,
                "a CompositePodGroup template must specify at least one of: "
                "`podGroupTemplates`, `compositePodGroupTemplates`",
            )
        )
    for field_name, items in (("podGroupTemplates", pgs), ("compositePodGroupTemplates", cpgs)):
        if len(items) > MAX_TEMPLATES:
            reasons.append(
                Rejection(
                    f"{path}.{field_name}",
                    f"too many: {len(items)}: must have at most {MAX_TEMPLATES} items",
                )
            )
    return reasons
