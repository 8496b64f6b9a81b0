"""What admission answers: per object ``created`` / ``updated`` / ``unchanged`` / ``rejected``.

A request with any rejected object is refused as a whole (``AdmissionOutcome.refused``); the
caller then appends nothing but one ``AdmissionRejected`` event built from
``AdmissionOutcome.rejection_record()``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ledger.resources.kinds import get_kind
from ledger.resources.models import Resource

Action = Literal["created", "updated", "unchanged", "rejected"]


@dataclass(frozen=True, slots=True)
class Rejection:
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


@dataclass
class AdmissionResult:
    index: int  # 0-based position in the request
    kind: str
    namespace: str | None
    name: str
    action: Action
    object: Resource | None  # the admitted object (priority & co. filled in); None if rejected
    normalized: dict[str, Any] | None  # what to store; None if rejected
    previous: Mapping[str, Any] | None  # the stored object it replaces, if any
    reasons: list[Rejection] = field(default_factory=list)

    @property
    def ref(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"

    @property
    def line(self) -> str:
        """kubectl-style: ``podgroup.scheduling.k8s.io/job-1 created``."""
        return f"{get_kind(self.kind).display(self.name)} {self.action}"

    @property
    def message(self) -> str:
        return "; ".join(str(r) for r in self.reasons)

    def __str__(self) -> str:
        if self.action == "rejected":
            return f"error: {self.ref}: {self.message}"
        return self.line


@dataclass
class AdmissionOutcome:
    results: list[AdmissionResult]

    @property
    def refused(self) -> bool:
        """True when any object was rejected: the whole request applies nothing."""
        return any(r.action == "rejected" for r in self.results)

    @property
    def rejected(self) -> list[AdmissionResult]:
        return [r for r in self.results if r.action == "rejected"]

    @property
    def changes(self) -> list[AdmissionResult]:
        """Created/updated objects to append, in request order (empty when refused)."""
        if self.refused:
            return []
        return [r for r in self.results if r.action in ("created", "updated")]

    def lines(self) -> list[str]:
        return [str(r) for r in self.results]

    def rejection_record(self) -> dict[str, Any]:
        """Data for the single ``AdmissionRejected`` event of a refused request."""
        return {
            "objects": [{"kind": r.kind, "namespace": r.namespace, "name": r.name} for r in self.results],
            "rejected": [
                {
                    "kind": r.kind,
                    "namespace": r.namespace,
                    "name": r.name,
                    "reasons": [{"field": x.field, "message": x.message} for x in r.reasons],
                    "message": r.message,
                }
                for r in self.rejected
            ],
        }
