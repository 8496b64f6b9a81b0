"""``attach --mode schedule`` (and ``shadow``): the ledger's SchedulerConfig made to serve the cluster.

podledger's worker on the ledger follows its SchedulerConfig. In schedule mode ``attach`` sets two
of its fields before it records anything: ``schedulerName`` = ``--scheduler-name`` (podledger
schedules only the pods that name it, as a second scheduler of the cluster does) and
``controllerEmulation: false`` (the cluster's controllers re-create preempted pods; the mirror
records those). The other fields are kept; with no SchedulerConfig in the ledger one named
``default`` is created. Applied as any object is (``SchedulerConfigCreated``/``Updated``, actor
``attach/<cluster>``); unchanged, nothing is appended.
"""

from __future__ import annotations

from typing import Any

from api.services.commands.objects import apply_objects
from ledger.database import Database
from ledger.queries.objects import list_objects
from ledger.resources.parse import Document, validate


def configure(db: Database, cluster: str, profile: str, shadow: bool = False) -> str:
    """Apply the SchedulerConfig; returns the apply line (``... created|configured|unchanged``).

    ``shadow``: podledger decides on every pod of the cluster's default scheduler (the shadow
    comparison) and also on the pods naming ``profile`` (a second-scheduler trial):
    ``additionalSchedulerNames: [profile]``, the rest kept."""
    with db.connect() as conn:
        rows = list_objects(conn, "SchedulerConfig")
    current: dict[str, Any] = dict(rows[0].object) if rows else {}
    spec = dict(current.get("spec") or {})
    if shadow:
        names = list(spec.get("additionalSchedulerNames") or [])
        if profile != (spec.get("schedulerName") or "default-scheduler") and profile not in names:
            names.append(profile)
        spec["additionalSchedulerNames"] = names
    else:
        spec.update(schedulerName=profile, controllerEmulation=False)
    manifest = {
        "apiVersion": "podledger.io/v1alpha1",
        "kind": "SchedulerConfig",
        "metadata": {"name": (current.get("metadata") or {}).get("name") or "default"},
        "spec": spec,
    }
    parsed, errors = validate(Document(1, f"attach:{cluster}", manifest))
    if parsed is None or errors:
        raise ValueError("; ".join(str(e) for e in errors) or "invalid SchedulerConfig")
    with db.unit_of_work() as uow:
        result = apply_objects(
            uow, [parsed], actor=f"attach/{cluster}", source=f"attach:{cluster}", meta={"via": "attach"}
        )
        uow.commit()
    if not result.ok:
        raise ValueError("; ".join(result.errors))
    return result.lines[0] if result.lines else "unchanged"
