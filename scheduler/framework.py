"""Scheduling framework vocabulary: ``Status``, filter results, fit errors, extension points.

Extension points (kube-scheduler names) a ``Profile`` lists plugins for: PreEnqueue, PreFilter,
Filter, Score, PlacementGenerate, PlacementScore, PostFilter (PodGroupPostFilter for groups).
QueueSort (``scheduler.queue``) and PlacementFeasible (GangScheduling's quorum check, part of the
§5.2 algorithm in ``scheduler.cycle.placement``) are fixed. Filters here are *vectorized*: a
filter plugin evaluates one pod against every node of the snapshot at once and returns a boolean
mask plus, for the rejected nodes, reason masks (one per distinct reason).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

from scheduler.messages import ERR_NO_NODES_AVAILABLE, NO_NODE_AVAILABLE_MSG

if TYPE_CHECKING:
    from scheduler.decisions import Decision
    from scheduler.model import NodeSelectorTerm, Pod, PreferredTerm, SchedulerConfig, Toleration
    from scheduler.plugins.placement_scoring import Candidates
    from scheduler.plugins.topology_placement import Placement
    from scheduler.snapshot import Snapshot
    from scheduler.state import State

BOOL = npt.NDArray[np.bool_]


class Code(enum.IntEnum):
    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5


@dataclass(frozen=True, slots=True)
class Status:
    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @property
    def message(self) -> str:
        return ", ".join(self.reasons)

    @property
    def ok(self) -> bool:
        return self.code == Code.SUCCESS

    @property
    def rejected(self) -> bool:
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    @property
    def is_error(self) -> bool:
        return self.code == Code.ERROR

    def with_plugin(self, plugin: str) -> Status:
        return Status(self.code, self.reasons, plugin)

    def append_reason(self, msg: str) -> Status:
        if not msg:
            return self
        return Status(self.code, (*self.reasons, msg), self.plugin)


SUCCESS = Status()


def unschedulable(msg: str, plugin: str = "") -> Status:
    return Status(Code.UNSCHEDULABLE, (msg,), plugin)


def unresolvable(msg: str, plugin: str = "") -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (msg,), plugin)


def error(msg: str, plugin: str = "") -> Status:
    return Status(Code.ERROR, (msg,), plugin)


def wait(msg: str, plugin: str = "") -> Status:
    return Status(Code.WAIT, (msg,), plugin)


@dataclass(frozen=True, slots=True)
class FilterSignature:
    """What node-static filters and scores read of a pod (pods with equal signatures share them)."""

    tolerations: tuple[Toleration, ...]
    node_selector: tuple[tuple[str, str], ...]
    required: tuple[NodeSelectorTerm, ...]
    preferred: tuple[PreferredTerm, ...]
    node_name: str | None = None  # spec.nodeName as requested (NodeName)


def signature_of(pod: Pod) -> FilterSignature:
    return FilterSignature(
        tuple(pod.tolerations),
        tuple(sorted(pod.node_selector.items())),
        tuple(pod.required_terms),
        tuple(pod.preferred_terms),
        pod.spec_node_name,
    )


@dataclass(slots=True)
class FilterResult:
    """Outcome of one Filter plugin for one pod over all nodes.

    ``ok[n]`` is True when node ``n`` passes. ``reasons`` lists ``(reason, mask)``; a rejected node
    carries every reason whose mask is set on it (NodeResourcesFit can give several).
    """

    plugin: str
    ok: BOOL
    reasons: list[tuple[str, BOOL]] = field(default_factory=list)
    code: Code = Code.UNSCHEDULABLE
    # nodes rejected UnschedulableAndUnresolvable when the plugin mixes codes (else ``code``)
    unresolvable: BOOL | None = None

    def node_reasons(self, i: int) -> list[str]:
        if self.ok[i]:
            return []
        return [r for r, m in self.reasons if m[i]]


@dataclass(slots=True)
class Diagnosis:
    """Why a pod fitted no node of the considered set (kube-scheduler's framework.Diagnosis)."""

    num_nodes: int
    plugin_counts: dict[str, int]  # plugin -> nodes it rejected (first rejecting plugin per node)
    reason_counts: dict[str, int]  # reason -> nodes
    unresolvable: int = 0  # nodes rejected UnschedulableAndUnresolvable
    post_filter_msg: str = ""
    pre_filter_msg: str = ""

    def fit_error(self) -> str:
        return fit_error_message(
            self.num_nodes, self.reason_counts, self.post_filter_msg, self.pre_filter_msg
        )

    def top_plugin(self) -> str:
        best = ""
        best_n = -1
        for p, n in self.plugin_counts.items():  # insertion order = filter order
            if n > best_n:
                best, best_n = p, n
        return best


def fit_error_message(
    num_nodes: int, reason_counts: dict[str, int], post_filter_msg: str = "", pre_filter_msg: str = ""
) -> str:
    """FitError.Error(): ``0/N nodes are available: <count> <reason>, ....`` with the
    ``"<count> <reason>"`` strings sorted as strings (Go ``sort.Strings``), as upstream; a
    PreFilter rejection replaces the per-node reasons by its message."""
    if num_nodes == 0 and not pre_filter_msg:
        msg = ERR_NO_NODES_AVAILABLE
    else:
        msg = NO_NODE_AVAILABLE_MSG % num_nodes + ":"
        if pre_filter_msg:
            msg += " " + pre_filter_msg + "."
        else:
            items = sorted(f"{v} {k}" for k, v in reason_counts.items() if v > 0)
            if items:
                msg += " " + ", ".join(items) + "."
    if post_filter_msg:
        msg += " " + post_filter_msg + "."
    return msg


def diagnose(results: Sequence[FilterResult], subset: BOOL | None) -> Diagnosis:
    """Attribute each rejected node of ``subset`` to the first plugin (in filter order) that
    rejects it, like kube-scheduler's RunFilterPlugins, and count reasons."""
    if not results:
        return Diagnosis(0, {}, {})
    n = len(results[0].ok)
    alive_mask: BOOL = np.ones(n, dtype=np.bool_) if subset is None else subset.copy()
    total = int(np.count_nonzero(alive_mask))
    plugin_counts: dict[str, int] = {}
    reason_counts: dict[str, int] = {}
    uu = 0
    for fr in results:
        rej = alive_mask & ~fr.ok
        cnt = int(np.count_nonzero(rej))
        if cnt:
            plugin_counts[fr.plugin] = plugin_counts.get(fr.plugin, 0) + cnt
            if fr.unresolvable is not None:
                uu += int(np.count_nonzero(rej & fr.unresolvable))
            elif fr.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                uu += cnt
            for reason, m in fr.reasons:
                c = int(np.count_nonzero(m & rej))
                if c:
                    reason_counts[reason] = reason_counts.get(reason, 0) + c
            alive_mask &= fr.ok
    return Diagnosis(total, plugin_counts, reason_counts, uu)


# --------------------------------------------------------------------------- attempt requests
@dataclass(frozen=True, slots=True)
class PreFilterRequest:
    kind: str  # pod | podgroup | compositepodgroup
    key: str  # "ns/name" of the pod or root group
    pods: tuple[Pod, ...]  # the attempt's pending pods, queue order
    now: float
    state: State


@dataclass(frozen=True, slots=True)
class PostFilterRequest:
    kind: str  # pod | podgroup | compositepodgroup
    key: str  # "ns/name" of the preemptor pod or root group
    pods: tuple[Pod, ...]  # the attempt's pending pods, queue order
    priority: int
    preemption_policy: str
    status: Status  # the failure being handled
    diagnosis: Diagnosis | None
    now: float
    state: State  # read-only view; state.snap is the snapshot (reservations already reverted)
    reschedule: Callable[[], tuple[Status, dict[str, str]]]


@dataclass(frozen=True, slots=True)
class PostFilterResult:
    status: Status  # Success = preemption started (waiting on preemption)
    nominations: Mapping[str, str] = field(default_factory=dict)  # pod key -> node
    victims: tuple[str, ...] = ()  # pod keys removed from the cluster
    decisions: tuple[Decision, ...] = ()


# --------------------------------------------------------------------------- extension points
# A plugin is an object with a ``name`` and the method of its extension point; the ``Profile``
# lists them in call order. Plugins that need the scheduler's state (quotas, preemption) are
# built per Scheduler by ``scheduler.profile.default_profile``.


class PreEnqueuePlugin(Protocol):
    """Before an entity enters the active queue. The first non-success status gates the entity
    (every pod gets ``PodGated``); it is re-evaluated when the entity or the cluster changes.
    ``passes_plain(pod)`` is True when a plain pod certainly passes (the queue's fast path)."""

    name: str

    def pre_enqueue(self, state: State, entity: str, pods: Sequence[Pod]) -> Status: ...

    def passes_plain(self, pod: Pod) -> bool: ...


def plain_checks(plugins: Iterable[object]) -> tuple[Callable[[Pod], bool], ...] | None:
    """The plugins' ``passes_plain`` checks, for an extension point's fast path for plain pods:
    None unless every plugin offers one (an empty tuple when there are no plugins)."""
    checks = [getattr(p, "passes_plain", None) for p in plugins]
    if not all(checks):
        return None
    return tuple(c for c in checks if c is not None)


class PreFilterPlugin(Protocol):
    """Once per attempt, before any node is filtered (a plain pod; a group after validation).
    ``None`` or Success: nothing to say; otherwise the attempt fails with the status. A plugin
    may offer ``passes_plain(pod)``, True when it has nothing to say about a plain pod's attempt:
    when every plugin offers it and says so, the cycle skips the extension point."""

    name: str

    def pre_filter(self, req: PreFilterRequest) -> Status | None: ...


class FilterPlugin(Protocol):
    """A node-static filter, vectorized over all nodes. It may read only the pod's
    ``FilterSignature`` (results are cached per signature until the node set changes).
    NodeResourcesFit, which depends on every assumed pod, is built into the pod scheduler's
    incremental cache and always runs after the profile's filters."""

    name: str

    def filter(self, sig: FilterSignature, snap: Snapshot) -> FilterResult: ...


class ScorePlugin(Protocol):
    """A node-static scorer: raw per-node scores (None when they cannot change the ranking),
    normalized to 0..100 (reversed when ``reverse``), weighted by ``config.plugin_weights[name]``
    (``default_weight`` when absent) and added to NodeResourcesFit's score."""

    name: str
    default_weight: int
    reverse: bool

    def score_raw(self, sig: FilterSignature, snap: Snapshot) -> npt.NDArray[np.int64] | None: ...


class PodFilterPlugin(Protocol):
    """A pod-aware filter, vectorized over all nodes: it reads the whole pod and the scheduled
    (assigned + assumed) pods through the snapshot, so it sees the pods a PodGroup cycle has
    already assumed. ``active`` False means the pod passes every node (nothing to compute; pods
    without the plugin's fields decide exactly as without the plugin). ``before_fit``: runs
    before NodeResourcesFit in the filter order (NodePorts), else after it."""

    name: str
    before_fit: bool

    def active(self, pod: Pod, snap: Snapshot) -> bool: ...

    def filter_pod(self, pod: Pod, snap: Snapshot) -> FilterResult: ...


class PodScorePlugin(Protocol):
    """A pod-aware scorer: normalized scores (0..100) of the nodes ``idx`` (the feasible ones),
    weighted by ``config.plugin_weights[name]`` (``default_weight`` when absent); None when it
    has nothing to say for the pod (upstream's PreScore Skip)."""

    name: str
    default_weight: int

    def score_active(self, pod: Pod, snap: Snapshot, config: SchedulerConfig) -> bool: ...

    def score_pod(
        self, pod: Pod, snap: Snapshot, idx: npt.NDArray[np.intp], config: SchedulerConfig
    ) -> npt.NDArray[np.int64] | None: ...


class PlacementGeneratePlugin(Protocol):
    """Candidate placements of a group with a topology constraint (§6.2)."""

    name: str

    def generate(
        self, snap: Snapshot, key: str | None, parent: BOOL, scheduled_nodes: Iterable[str]
    ) -> tuple[list[Placement], Status]: ...


class PlacementScorePlugin(Protocol):
    """Scores (0..100) of the successful placements of one evaluation (§6.4); weighted by
    ``config.plugin_weights[name]`` (``default_weight`` when absent) and summed."""

    name: str
    default_weight: int

    def placement_scores(self, candidates: Candidates) -> npt.NDArray[np.int64]: ...


class PostFilterPlugin(Protocol):
    """After a failed attempt (Unschedulable): the first non-None result is applied (preemption)."""

    name: str

    def post_filter(self, req: PostFilterRequest) -> PostFilterResult | None: ...


@dataclass(frozen=True)
class Profile:
    """The plugins of each extension point, in call order. Replace a field with
    ``dataclasses.replace`` and hand the result to ``Scheduler.use_profile`` to change it."""

    pre_enqueue: tuple[PreEnqueuePlugin, ...] = ()
    pre_filter: tuple[PreFilterPlugin, ...] = ()
    filter: tuple[FilterPlugin, ...] = ()
    score: tuple[ScorePlugin, ...] = ()
    pod_filter: tuple[PodFilterPlugin, ...] = ()
    pod_score: tuple[PodScorePlugin, ...] = ()
    placement_generate: PlacementGeneratePlugin | None = None
    placement_score: tuple[PlacementScorePlugin, ...] = ()
    post_filter: tuple[PostFilterPlugin, ...] = ()

    def run_pre_enqueue(self, state: State, entity: str, pods: Sequence[Pod]) -> Status:
        for p in self.pre_enqueue:
            s = p.pre_enqueue(state, entity, pods)
            if not s.ok:
                return s
        return SUCCESS

    def run_pre_filter(self, req: PreFilterRequest) -> Status | None:
        for p in self.pre_filter:
            s = p.pre_filter(req)
            if s is not None and not s.ok:
                return s
        return None

    def run_post_filter(self, req: PostFilterRequest) -> PostFilterResult | None:
        for p in self.post_filter:
            r = p.post_filter(req)
            if r is not None:
                return r
        return None
