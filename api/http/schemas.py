"""Request and response models of the HTTP API (they make the OpenAPI spec)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Problem(BaseModel):
    """One problem with one field of one object of a request."""

    kind: str = Field("", examples=["Pod"])
    namespace: str | None = Field(None, examples=["default"])
    name: str = Field("", examples=["p6"])
    field: str = Field(
        "", description="Field path inside the object", examples=["spec.containers[0].resources.requests.cpu"]
    )
    message: str = Field(..., examples=["must not be negative"])
    document: int | None = Field(None, description="1-based document number in the request body")
    item: int | None = Field(None, description="1-based item inside a `kind: List` document")
    line: int | None = Field(None, description="Line of a YAML syntax error")


class Error(BaseModel):
    """Every error response has this shape."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "error": "invalid",
                    "message": "1 invalid field(s): nothing applied",
                    "details": [
                        {
                            "kind": "Pod",
                            "namespace": "team-a",
                            "name": "job-1-0",
                            "field": "spec.containers[0].resources.requests.cpu",
                            "message": "must not be negative",
                            "document": 2,
                        }
                    ],
                }
            ]
        }
    )

    error: str = Field(
        ...,
        examples=["invalid"],
        description="A stable code: unauthorized, forbidden, not_found, invalid, rejected, conflict, ...",
    )
    message: str = Field(..., examples=["1 invalid object: nothing applied"])
    details: list[Problem] = Field(default_factory=list)
    position: int | None = Field(None, description="For `rejected`: position of the AdmissionRejected event")


class EventRef(BaseModel):
    position: int
    stream: str
    version: int
    type: str


class ApplyLine(BaseModel):
    object: str = Field(..., examples=["podgroup.scheduling.k8s.io/job-1"])
    action: str = Field(..., examples=["created"], description="created, updated or unchanged")


class ApplyResponse(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "results": [
                        {"object": "podgroup.scheduling.k8s.io/job-1", "action": "created"},
                        {"object": "pod/job-1-0", "action": "created"},
                    ],
                    "events": [
                        {
                            "position": 41,
                            "stream": "podgroup/team-a/job-1",
                            "version": 1,
                            "type": "PodGroupCreated",
                        },
                        {"position": 42, "stream": "pod/team-a/job-1-0", "version": 1, "type": "PodCreated"},
                    ],
                    "replayed": False,
                }
            ]
        }
    )

    results: list[ApplyLine]
    events: list[EventRef] = Field(default_factory=list, description="The events this request appended")
    replayed: bool = Field(
        False, description="True when the Idempotency-Key was seen before: nothing new was appended"
    )
    dryRun: bool = Field(False, description="A dry run: the events are what would have been appended")


class DeleteResponse(BaseModel):
    deleted: str = Field(..., examples=["pod/team-a/p1"])
    event: EventRef
    replayed: bool = False
    dryRun: bool = Field(False, description="A dry run: the event is what would have been appended")


class ListMeta(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    count: int
    continue_: str | None = Field(
        None, alias="continue", description="Opaque cursor of the next page; null on the last page"
    )


class ObjectList(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    apiVersion: str = "v1"
    kind: Literal["List"] = "List"
    items: list[dict[str, Any]]
    metadata: ListMeta


class Event(BaseModel):
    position: int
    stream: str
    version: int
    type: str
    schemaVersion: int
    eventId: str
    data: dict[str, Any]
    meta: dict[str, Any]
    recordedAt: datetime
    effectiveAt: datetime


class EventPage(BaseModel):
    items: list[Event]
    next: int = Field(..., description="Pass as `after` to read the following page")
    head: int = Field(..., description="Newest position of the log when the page was read")


class PredictedStart(BaseModel):
    """The predicted wait from ``as_of`` (the position's time): p50 and p90 in seconds (None: not
    within a year), and what it rests on (issue 34)."""

    p50_seconds: float | None = None
    p90_seconds: float | None = None
    point_seconds: float | None = Field(
        None, description="the estimate with the least expected relative error"
    )
    cases: int = Field(description="completed lifetimes of similar pods the survival curve rests on")
    censored: int = Field(description="similar pods still running (censored lifetimes)")
    holders: int = Field(description="pods bound on the nodes it can use")
    queue_ahead: int
    closest_domain: str | None = None
    as_of: str | None = None
    method: str | None = None


class Explanation(BaseModel):
    """Why a PodGroup or Pod is where it is (see `podledger explain`)."""

    model_config = ConfigDict(extra="allow")

    kind: str
    namespace: str
    name: str
    position: int | None = None
    verdict: str | None = None
    condition: dict[str, Any] | None = None
    reasons: list[Any] = Field(default_factory=list)
    predictedStart: PredictedStart | None = Field(  # noqa: N815 (the document's key)
        None, description="When a pending pod or PodGroup will start, as of `position` (docs/prediction.md)"
    )
    text: str | None = Field(None, description="The explanation as `podledger explain` prints it")


class HistoryEntry(BaseModel):
    model_config = ConfigDict(extra="allow")

    position: int
    type: str
    stream: str | None = None
    time: Any = None
    relative: Any = None
    summary: str | None = None
    data: dict[str, Any] | None = None


class History(BaseModel):
    kind: str
    namespace: str
    name: str
    items: list[HistoryEntry]


class StateAt(BaseModel):
    model_config = ConfigDict(extra="allow")

    position: int
    objects: list[dict[str, Any]]


class WhatIfRequest(BaseModel):
    config: dict[str, Any] = Field(
        default_factory=dict,
        description="A SchedulerConfig spec to re-run the recorded inputs under",
        examples=[{"preemptionAlgorithm": "None"}],
    )


class Job(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": "5f0c2d7e9a3b4c1d8e6f7a2b3c4d5e6f",
                    "kind": "whatif",
                    "status": "succeeded",
                    "statusUrl": "/podledger/v1/jobs/5f0c2d7e9a3b4c1d8e6f7a2b3c4d5e6f",
                    "createdAt": "2026-01-01T00:00:00Z",
                    "startedAt": "2026-01-01T00:00:00Z",
                    "finishedAt": "2026-01-01T00:00:02Z",
                    "result": {"changed": [], "preemptionsAdded": [], "preemptionsAvoided": []},
                    "error": None,
                }
            ]
        }
    )

    id: str
    kind: str = "whatif"
    status: Literal["pending", "running", "succeeded", "failed"]
    statusUrl: str
    createdAt: datetime
    startedAt: datetime | None = None
    finishedAt: datetime | None = None
    result: dict[str, Any] | None = None
    error: str | None = None


class Health(BaseModel):
    status: Literal["ok", "unavailable"]
    checks: dict[str, str] = Field(default_factory=dict)
