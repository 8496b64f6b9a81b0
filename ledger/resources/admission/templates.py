"""Workload template trees, checked on create and update (upstream ``ValidateWorkloadSpec``).

The rules and field paths of kubernetes/kubernetes ``pkg/apis/scheduling/validation``
(``validation.go``) and of the declarative tags of the ``scheduling.k8s.io`` types (their tests in
``pkg/registry/scheduling/workload/declarative_validation_test.go``):

* exactly one of the two template lists (``spec``), at most 8 templates per list (the list);
* template names unique within a list (the repeated entry, ``...podGroupTemplates[1]``) and
  across the whole tree (the later one's ``name``, in upstream's walk order);
* a CompositePodGroup template has at least one child (its own path);
* no CompositePodGroup template at depth 4, so no template below depth 4 (the root
  ``compositePodGroupTemplates[i]`` whose tree is too deep);
* every template of the tree with the same ``priorityClassName`` and ``priority`` (``spec``).

One podledger rule has no upstream test to compare with: a ``single`` disruption mode under a
CompositePodGroup template whose mode is ``all`` (docs/upstream.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from ledger.resources.admission.outcome import Rejection
from ledger.resources.models import Workload
from ledger.resources.models.scheduling import CompositePodGroupTemplate, PodGroupTemplate
from ledger.resources.models.values import exactly_one_of

MAX_TEMPLATES = 8
MAX_TREE_DEPTH = 4

MSG_DEPTH = f"maximum template hierarchy depth is {MAX_TREE_DEPTH}"
MSG_NO_CHILD = "must have at least one child PodGroupTemplate or CompositePodGroupTemplate"
MSG_PRIORITY_PG = "detected multiple priority configurations"
MSG_PRIORITY_CPG = "all priority and priorityClassName values must be identical, detected multiple values"


def workload_problems(workload: Workload) -> list[Rejection]:
    """Template-tree rules of a Workload."""
    spec = workload.spec
    pgs, cpgs = spec.pod_group_templates, spec.composite_pod_group_templates
    members = {"podGroupTemplates": bool(pgs), "compositePodGroupTemplates": bool(cpgs)}
    reasons = [Rejection(p, message) for p, message in exactly_one_of("spec", members)]
    reasons += _list_problems("spec", pgs, cpgs)
    reasons += _names_problems(workload)
    for i, cpg in enumerate(cpgs):
        if _too_deep(cpg, 1):
            reasons.append(Rejection(f"spec.compositePodGroupTemplates[{i}]", MSG_DEPTH))
    reasons += _priority_problems(workload)
    for path, _, template, parent in workload.templates():
        if isinstance(template, CompositePodGroupTemplate):
            if not template.pod_group_templates and not template.composite_pod_group_templates:
                reasons.append(Rejection(path, MSG_NO_CHILD))
            reasons += _list_problems(
                path, template.pod_group_templates, template.composite_pod_group_templates
            )
        if parent is not None and parent.disruption == "All" and template.disruption == "Single":
            reasons.append(
                Rejection(
                    f"{path}.disruptionMode",
                    f"disruptionMode single is not allowed under the CompositePodGroup "
                    f'template "{parent.name}" whose disruptionMode is all',
                )
            )
    return reasons


def _list_problems(
    path: str, pgs: Sequence[PodGroupTemplate], cpgs: Sequence[CompositePodGroupTemplate]
) -> list[Rejection]:
    """The two template lists of the Workload spec or of a CompositePodGroup template: at most 8
    entries, names unique within the list (``listType=map``: the repeated entry's index)."""
    reasons: list[Rejection] = []
    lists: tuple[tuple[str, Sequence[PodGroupTemplate | CompositePodGroupTemplate]], ...] = (
        ("podGroupTemplates", pgs),
        ("compositePodGroupTemplates", cpgs),
    )
    for field_name, items in lists:
        if len(items) > MAX_TEMPLATES:
            reasons.append(
                Rejection(
                    f"{path}.{field_name}",
                    f"too many: {len(items)}: must have at most {MAX_TEMPLATES} items",
                )
            )
        seen: set[str] = set()
        for i, item in enumerate(items):
            if item.name in seen:
                reasons.append(Rejection(f"{path}.{field_name}[{i}]", f'Duplicate value: "{item.name}"'))
            seen.add(item.name)
    return reasons


def _names_problems(workload: Workload) -> list[Rejection]:
    """Names unique across the tree, walked as upstream's ``validateWorkloadTemplateNamesUniqueness``:
    a list's names are compared with the names seen before it and only then added (so repeats
    within one list are left to ``_list_problems``); CompositePodGroup children come after all
    their siblings' names."""
    spec = workload.spec
    names = {t.name for t in spec.pod_group_templates}
    return _cpg_list_names("spec", spec.composite_pod_group_templates, names)


def _cpg_list_names(
    path: str, templates: Sequence[CompositePodGroupTemplate], names: set[str]
) -> list[Rejection]:
    reasons: list[Rejection] = []
    for i, t in enumerate(templates):
        if t.name in names:
            reasons.append(
                Rejection(f"{path}.compositePodGroupTemplates[{i}].name", f'Duplicate value: "{t.name}"')
            )
    names |= {t.name for t in templates}
    for i, t in enumerate(templates):
        cpath = f"{path}.compositePodGroupTemplates[{i}]"
        for j, child in enumerate(t.pod_group_templates):
            if child.name in names:
                reasons.append(
                    Rejection(f"{cpath}.podGroupTemplates[{j}].name", f'Duplicate value: "{child.name}"')
                )
        names |= {child.name for child in t.pod_group_templates}
        reasons += _cpg_list_names(cpath, t.composite_pod_group_templates, names)
    return reasons


def _too_deep(cpg: CompositePodGroupTemplate, depth: int) -> bool:
    """A CompositePodGroup template at depth 4 somewhere below ``cpg`` (itself at ``depth``)."""
    if depth == MAX_TREE_DEPTH:
        return True
    return any(_too_deep(child, depth + 1) for child in cpg.composite_pod_group_templates)


def _priority_problems(workload: Workload) -> list[Rejection]:
    """Upstream ``validateWorkloadPriority``: the first template's ``(priorityClassName,
    priority)`` against every other one, the root PodGroup templates first, then each
    CompositePodGroup tree (itself, its CompositePodGroup children, its PodGroup children)."""
    spec = workload.spec
    first: list[tuple[str | None, int | None]] = []

    def same(template: PodGroupTemplate | CompositePodGroupTemplate) -> bool:
        key = (template.priority_class_name, template.priority)
        if not first:
            first.append(key)
        return first[0] == key

    if not all(same(t) for t in spec.pod_group_templates):
        return [Rejection("spec", MSG_PRIORITY_PG)]

    def tree(cpg: CompositePodGroupTemplate) -> bool:
        return (
            same(cpg)
            and all(tree(c) for c in cpg.composite_pod_group_templates)
            and all(same(c) for c in cpg.pod_group_templates)
        )

    if not all(tree(c) for c in spec.composite_pod_group_templates):
        return [Rejection("spec", MSG_PRIORITY_CPG)]
    return []
