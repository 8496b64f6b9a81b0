"""How ``attach --mode schedule`` writes one group condition (api/attach/conditions.py), against a
stand-in for the cluster's API: never regress a True condition, write nothing unchanged, keep
``lastTransitionTime`` unless the status flips, 404 is ``gone``, other errors ``failed``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from api.attach.conditions import ConditionWriter, Decision
from api.attach.remote import RemoteError

AT = datetime(2026, 12, 4, 12, 0, 0, tzinfo=UTC)


class FakeRemote:
    def __init__(self, obj: dict[str, Any] | None, patch_error: int | None = None) -> None:
        self.obj, self.patch_error = obj, patch_error
        self.patches: list[tuple[str, dict[str, Any]]] = []

    def get_json(self, path: str) -> dict[str, Any]:
        if self.obj is None:
            raise RemoteError(f"GET {path}: 404 not found", 404)
        return self.obj

    def patch_json(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        if self.patch_error:
            raise RemoteError(f"PATCH {path}: {self.patch_error}", self.patch_error)
        self.patches.append((path, body))
        return {}


def decision(status: str = "True", reason: str = "Scheduled", message: str = "") -> Decision:
    return Decision(7, "PodGroup", "ns/g", "PodGroupInitiallyScheduled", status, reason, message, AT)


def have(status: str, reason: str, message: str = "", generation: int | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "g", "namespace": "ns"}
    if generation is not None:
        meta["generation"] = generation
    cond = {
        "type": "PodGroupInitiallyScheduled",
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": "2026-12-01T00:00:00Z",
    }
    return {"metadata": meta, "status": {"conditions": [cond]}}


def writer(remote: FakeRemote) -> ConditionWriter:
    return ConditionWriter(None, remote, "c")  # type: ignore[arg-type]


def test_patches_a_new_condition_on_the_status_subresource() -> None:
    remote = FakeRemote({"metadata": {"name": "g", "generation": 3}})
    assert writer(remote).send(decision()) == ("patched", 200, "")
    ((path, body),) = remote.patches
    assert path == "/apis/scheduling.k8s.io/v1beta1/namespaces/ns/podgroups/g/status"
    assert body == {
        "status": {
            "conditions": [
                {
                    "type": "PodGroupInitiallyScheduled",
                    "status": "True",
                    "reason": "Scheduled",
                    "message": "",
                    "lastTransitionTime": "2026-12-04T12:00:00Z",
                    "observedGeneration": 3,
                }
            ]
        }
    }


def test_never_regresses_and_writes_nothing_unchanged() -> None:
    remote = FakeRemote(have("True", "Scheduled"))
    assert writer(remote).send(decision("False", "Unschedulable", "no"))[0] == "kept"
    assert writer(remote).send(decision())[0] == "unchanged"
    assert remote.patches == []


def test_keeps_the_transition_time_when_the_status_does_not_flip() -> None:
    remote = FakeRemote(have("False", "Unschedulable", "old"))
    assert writer(remote).send(decision("False", "Unschedulable", "new"))[0] == "patched"
    cond = remote.patches[0][1]["status"]["conditions"][0]
    assert cond["lastTransitionTime"] == "2026-12-01T00:00:00Z" and cond["message"] == "new"


def test_errors() -> None:
    assert writer(FakeRemote(None)).send(decision())[:2] == ("gone", 404)
    assert writer(FakeRemote(have("False", "Unschedulable"), patch_error=403)).send(decision())[:2] == (
        "failed",
        403,
    )
