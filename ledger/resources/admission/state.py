"""The state admission reads: stored objects, overlaid with the request's earlier objects.

Objects admitted earlier in the same request are visible to later ones (a PriorityClass or
Workload defined at the top of a file can be used further down).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ledger.resources.models import ObjectKey, Workload

if TYPE_CHECKING:
    from ledger.resources.admission.outcome import AdmissionOutcome


def object_key(obj: Mapping[str, Any]) -> ObjectKey:
    """``(kind, namespace or "", name)`` of a normalized object."""
    meta = obj["metadata"]
    return (str(obj["kind"]), str(meta.get("namespace") or ""), str(meta["name"]))


class AdmissionState(Protocol):
    """Read access to the current (admitted) state, as normalized dicts.

    ``get`` is called for the object itself, Workloads, parent CompositePodGroups and
    PriorityClasses; ``list`` only for the small kinds ``PriorityClass``, ``ElasticQuota``
    and ``ElasticQuotaTree``. ``namespace`` is ``""`` for cluster-scoped kinds.
    """

    def get(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None: ...

    def list(self, kind: str) -> Iterable[Mapping[str, Any]]: ...


@dataclass
class InMemoryState:
    """An :class:`AdmissionState` over a dict of normalized objects (tests, simulation)."""

    objects: dict[ObjectKey, Mapping[str, Any]] = field(default_factory=dict)

    @classmethod
    def from_objects(cls, objects: Iterable[Mapping[str, Any]]) -> InMemoryState:
        state = cls()
        for obj in objects:
            state.put(obj)
        return state

    def put(self, obj: Mapping[str, Any]) -> None:
        self.objects[object_key(obj)] = obj

    def apply(self, outcome: AdmissionOutcome) -> None:
        """Store every created/updated object of an outcome that was not refused."""
        if not outcome.refused:
            for result in outcome.results:
                if result.normalized is not None and result.action in ("created", "updated"):
                    self.put(result.normalized)

    def get(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.objects.get((kind, namespace, name))

    def list(self, kind: str) -> Iterable[Mapping[str, Any]]:
        return [obj for key, obj in self.objects.items() if key[0] == kind]


class Batch:
    """The state as seen by the next object: stored state overlaid with this request's objects.

    ``list`` results are loaded from the state once per kind and kept up to date as objects of
    the request are admitted, so a request of many pods costs one PriorityClass listing.
    """

    def __init__(self, state: AdmissionState) -> None:
        self.state = state
        self.overlay: dict[ObjectKey, Mapping[str, Any]] = {}
        self._lists: dict[str, dict[ObjectKey, Mapping[str, Any]]] = {}
        self._workloads: dict[tuple[str, str], Workload | None] = {}

    def get(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        key = (kind, namespace, name)
        if key in self.overlay:
            return self.overlay[key]
        return self.state.get(kind, namespace, name)

    def list(self, kind: str) -> list[Mapping[str, Any]]:
        if kind not in self._lists:
            seen = {object_key(obj): obj for obj in self.state.list(kind)}
            for key, obj in self.overlay.items():
                if key[0] == kind:
                    seen[key] = obj
            self._lists[kind] = seen
        return list(self._lists[kind].values())

    def put(self, key: ObjectKey, obj: Mapping[str, Any]) -> None:
        self.overlay[key] = obj
        if key[0] in self._lists:
            self._lists[key[0]][key] = obj
        if key[0] == "Workload":
            self._workloads.pop((key[1], key[2]), None)

    def workload(self, namespace: str, name: str) -> Workload | None:
        """The Workload as a model (parsed once per request)."""
        key = (namespace, name)
        if key not in self._workloads:
            stored = self.get("Workload", namespace, name)
            self._workloads[key] = Workload.from_normalized(stored) if stored is not None else None
        return self._workloads[key]
