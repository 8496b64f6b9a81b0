"""Jobs: from a ``batch/v1`` Job to the PodGroup its controller compiled (for ``explain job``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from api.services.errors import NotFound
from ledger.queries import objects as objects_q
from ledger.resources.job import pod_group_name
from ledger.resources.models.batch import Job

if TYPE_CHECKING:
    from ledger.database import Database


def job_pod_group(db: Database, namespace: str, name: str, pos: int) -> str:
    """The name of the PodGroup compiled for Job ``namespace/name`` as of log position ``pos``
    (NotFound if there is none).

    The name is derived from the Job's manifest exactly as the compile step derives it; a Job
    whose pod template names its own PodGroup (``schedulingGroup``) is explained through that one,
    and a Job mirrored from a cluster (``attach``) through the PodGroup it controls.
    """
    from ledger.queries.state import objects_at

    with objects_at(db, pos) as conn:
        manifest = objects_q.manifest(conn, "Job", namespace, name)
        # a mirrored cluster's Job: its controller named the PodGroup (from the Job's uid); the
        # PodGroup it controls is the one
        owned = [n for k, n in objects_q.controlled_by(conn, namespace, "Job", name) if k == "PodGroup"]
    if manifest is None:
        raise NotFound(f"Job {namespace}/{name} not found at position {pos}")
    job = Job.from_normalized(manifest)
    own = job.spec.template.spec.scheduling_group
    if own is not None:
        return own.pod_group_name
    if owned:
        return owned[0]
    if job.spec.suspend:
        raise NotFound(f"Job {namespace}/{name} is suspended: its controller has created no PodGroup yet")
    return pod_group_name(job)


__all__ = ["job_pod_group"]
