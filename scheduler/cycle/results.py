"""What an attempt produces: per-leaf outcomes, evaluated placements, counters, the group attempt."""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler.framework import SUCCESS, Diagnosis, PostFilterResult, Status
from scheduler.plugins.topology_placement import Placement
from scheduler.state import name_of


@dataclass(slots=True)
class LeafOutcome:
    key: str
    status: Status = SUCCESS
    assigned: list[tuple[str, int]] = field(default_factory=list)  # kept in the snapshot on success
    tried: list[tuple[str, int]] = field(default_factory=list)  # proposals of a failed evaluation
    devices: dict[str, tuple[int, ...]] = field(default_factory=dict)  # GPU-share pods' devices
    pod_status: dict[str, Status] = field(default_factory=dict)
    any_scheduled: bool = False
    diag: Diagnosis | None = None
    placement: str | None = None


@dataclass(slots=True)
class PlacementEval:
    placement: Placement
    status: Status
    placed: int  # proposed new pods
    any_scheduled: bool
    outcome: LeafOutcome | None = None  # set when evaluated pod by pod
    proposals: list[tuple[str, int]] = field(default_factory=list)
    added: dict[str, int] = field(default_factory=dict)  # resource -> proposed requests
    scheduled_before: int = 0


@dataclass(slots=True)
class Counters:
    generated: int = 0
    scored: int = 0
    evaluated: int = 0
    predicted: int = 0
    lines: list[str] = field(default_factory=list)
    line_count: int = 0

    def line(self, who: str, name: str, st: Status) -> None:
        self.line_count += 1
        if len(self.lines) < 8:  # the others are counted (line_count)
            msg = "Success" if st.ok else st.message
            self.lines.append(f"{name_of(who)}@{name or '*'}: {msg}")


@dataclass(slots=True)
class GroupAttempt:
    """Everything the facade needs to apply a group attempt."""

    root_kind: str  # pg | cpg
    root: str
    status: Status
    any_scheduled: bool
    leaves: list[str]
    cpgs: list[str]
    results: dict[str, Status]  # "pg:key"/"cpg:key" -> completed status
    outcomes: dict[str, LeafOutcome]
    counters: Counters
    validation_error: bool = False
    post: PostFilterResult | None = None
    diag: Diagnosis | None = None
    placement: str | None = None  # chosen placement of the root
