"""The resources ``attach`` mirrors, and a remote object as the manifest podledger stores.

The order of ``WATCHED`` is the order of the initial sync: objects that others refer to
(PriorityClasses, Workloads, PodGroups) come before the objects that refer to them, so
admission finds the references it checks.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from api.k8s.objects import PROJECTED_ANNOTATIONS

# Metadata the API server fills in: not part of what a user declared. ``uid`` is kept (the
# mirrored object keeps the cluster's uid) and also recorded in the event meta.
SERVER_METADATA = (
    "resourceVersion",
    "creationTimestamp",
    "managedFields",
    "generation",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)


@dataclass(frozen=True)
class Watched:
    kind: str
    group: str  # "" for the core group
    version: str
    plural: str
    namespaced: bool
    # other served versions of the same objects, tried in order when the cluster does not serve
    # ``version`` (its list answers 404): a cluster serves scheduling.k8s.io at the versions of
    # its release
    fallback: tuple[str, ...] = ()

    def next_version(self) -> Watched | None:
        if not self.fallback:
            return None
        return replace(self, version=self.fallback[0], fallback=self.fallback[1:])

    def path(self, namespace: str | None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            return f"{base}/namespaces/{namespace}/{self.plural}"
        return f"{base}/{self.plural}"


WATCHED: tuple[Watched, ...] = (
    Watched("PriorityClass", "scheduling.k8s.io", "v1", "priorityclasses", False),
    Watched("Node", "", "v1", "nodes", False),
    Watched("ElasticQuota", "scheduling.sigs.k8s.io", "v1alpha1", "elasticquotas", True),
    Watched("JobSet", "jobset.x-k8s.io", "v1alpha2", "jobsets", True),
    Watched("Job", "batch", "v1", "jobs", True),
    Watched("Workload", "scheduling.k8s.io", "v1beta1", "workloads", True, ("v1",)),
    Watched("PodGroup", "scheduling.k8s.io", "v1beta1", "podgroups", True, ("v1",)),
    Watched("CompositePodGroup", "scheduling.k8s.io", "v1alpha3", "compositepodgroups", True, ("v1beta1",)),
    Watched("PodDisruptionBudget", "policy", "v1", "poddisruptionbudgets", True),
    Watched("Pod", "", "v1", "pods", True),
)
BY_KIND = {w.kind: w for w in WATCHED}

# the cluster's Events, read (polled) for its scheduler's verdicts: events.k8s.io/v1, else core/v1
EVENTS = (
    Watched("Event", "events.k8s.io", "v1", "events", True),
    Watched("Event", "", "v1", "events", True),
)
SCHEDULING_REASONS = frozenset({"Scheduled", "FailedScheduling", "Preempted"})


def to_manifest(w: Watched, obj: dict[str, Any]) -> dict[str, Any]:
    """The remote object as a podledger manifest: server metadata dropped, the status dropped
    (podledger derives it) except a Node's (its capacity is an input), and a Pod's
    ``spec.nodeName`` dropped (the binding is recorded as its own event, by who made it)."""
    out = {k: v for k, v in obj.items() if k != "status" or w.kind == "Node"}
    out["apiVersion"] = f"{w.group}/{w.version}" if w.group else w.version
    out["kind"] = w.kind
    meta = {
        k: v for k, v in (obj.get("metadata") or {}).items() if k not in SERVER_METADATA and v is not None
    }
    if isinstance(meta.get("annotations"), dict):
        # a source that is itself a podledger shows its own facts as podledger.io/ annotations
        # (api/k8s/objects.py): facts of that ledger, not inputs of this one
        meta["annotations"] = {k: v for k, v in meta["annotations"].items() if k not in PROJECTED_ANNOTATIONS}
    for key in ("labels", "annotations", "ownerReferences", "finalizers"):
        if key in meta and not meta[key]:
            del meta[key]
    if not w.namespaced:
        meta.pop("namespace", None)
    out["metadata"] = meta
    if w.kind == "Pod":
        spec = dict(out.get("spec") or {})
        spec.pop("nodeName", None)
        out["spec"] = spec
    if w.kind == "Node" and isinstance(out.get("status"), dict):
        # conditions, addresses, images ... change all the time and podledger ignores them
        keep = ("capacity", "allocatable")
        out["status"] = {k: v for k, v in out["status"].items() if k in keep}
    return out


def node_name(obj: dict[str, Any]) -> str | None:
    return (obj.get("spec") or {}).get("nodeName") or None


def _metadata(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    return meta if isinstance(meta, dict) else {}


def key_of(w: Watched, obj: dict[str, Any]) -> tuple[str, str, str]:
    meta = _metadata(obj)
    ns = str(meta.get("namespace") or "default") if w.namespaced else ""
    return (w.kind, ns, str(meta.get("name") or ""))


def resource_version(obj: dict[str, Any]) -> str:
    return str(_metadata(obj).get("resourceVersion") or "")


def rv_number(rv: str | None) -> int | None:
    """A resourceVersion as a number (etcd revisions, podledger's log positions: int64), else
    None (also for digits past int64: attach cannot resume a watch from it)."""
    if rv is None or not rv.isascii() or not rv.isdigit() or len(rv) > 19:
        return None
    n = int(rv)
    return n if n < 1 << 63 else None
