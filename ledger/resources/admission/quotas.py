"""One ElasticQuota per namespace, one ElasticQuotaTree per cluster (docs/semantics.md Q.1).

Checked when the object is created; an update of the existing one is always allowed.
"""

from __future__ import annotations

from ledger.resources.admission.outcome import Rejection
from ledger.resources.admission.state import Batch
from ledger.resources.models import ElasticQuota


def elastic_quota_problems(eq: ElasticQuota, batch: Batch) -> list[Rejection]:
    for other in batch.list("ElasticQuota"):
        meta = other["metadata"]
        if meta.get("namespace") == eq.metadata.namespace and meta["name"] != eq.name:
            return [
                Rejection(
                    "metadata.namespace",
                    f'namespace "{eq.metadata.namespace}" already has the ElasticQuota "{meta["name"]}"; '
                    "only one ElasticQuota per namespace is allowed",
                )
            ]
    return []


def quota_tree_problems(batch: Batch) -> list[Rejection]:
    for other in batch.list("ElasticQuotaTree"):
        meta = other["metadata"]
        return [
            Rejection(
                "metadata.name",
                f"the ElasticQuotaTree {meta.get('namespace')}/{meta['name']} already exists; "
                "only one ElasticQuotaTree per cluster is allowed",
            )
        ]
    return []
