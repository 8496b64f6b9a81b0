"""References of a new PodGroup / CompositePodGroup (docs/semantics.md §2.5, §2.6).

``workloadRef`` must name an existing Workload (in the group's namespace) and a template of
the matching kind (PodGroup or CompositePodGroup template); when the parent CompositePodGroup
exists, it must reference the same Workload (all groups of a hierarchy share one Workload).
"""

from __future__ import annotations

from ledger.resources.admission.outcome import Rejection
from ledger.resources.admission.state import Batch
from ledger.resources.models import CompositePodGroup, PodGroup
from ledger.resources.models.scheduling import PodGroupTemplate


def workload_ref_problems(group: PodGroup | CompositePodGroup, batch: Batch) -> list[Rejection]:
    ref = group.spec.workload_ref
    if ref is None:
        return []
    ns = group.metadata.namespace or "default"
    workload = batch.workload(ns, ref.workload_name)
    if workload is None:
        return [
            Rejection(
                "spec.workloadRef.workloadName",
                f'forbidden: Workload "{ref.workload_name}" not found in namespace "{ns}"',
            )
        ]
    template = workload.find_template(ref.template_name)
    wanted = "PodGroup" if isinstance(group, PodGroup) else "CompositePodGroup"
    if template is None:
        return [
            Rejection(
                "spec.workloadRef.templateName",
                f'forbidden: Workload {ns}/{ref.workload_name} has no template named "{ref.template_name}"',
            )
        ]
    is_pg_template = isinstance(template, PodGroupTemplate)
    if is_pg_template != isinstance(group, PodGroup):
        actual = "PodGroup" if is_pg_template else "CompositePodGroup"
        return [
            Rejection(
                "spec.workloadRef.templateName",
                f'forbidden: template "{ref.template_name}" of Workload {ns}/{ref.workload_name} '
                f"is a {actual} template, not a {wanted} template",
            )
        ]
    parent_name = group.spec.parent_composite_pod_group_name
    if parent_name:
        parent = batch.get("CompositePodGroup", ns, parent_name)
        if parent is not None:
            parent_wl = parent["spec"]["workloadRef"]["workloadName"]
            if parent_wl != ref.workload_name:
                return [
                    Rejection(
                        "spec.parentCompositePodGroupName",
                        f"forbidden: all groups in a hierarchy must reference the same Workload: parent "
                        f'CompositePodGroup {ns}/{parent_name} references Workload "{parent_wl}", this '
                        f'{wanted} references "{ref.workload_name}"',
                    )
                ]
    return []
