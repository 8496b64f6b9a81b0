"""Public facade of the pure scheduling core.

The caller feeds every change in log order (``upsert_*``/``remove_*``) and runs cycles at a
logical time ``now``. The Scheduler applies its own decisions to its state: a bound pod counts as
assigned afterwards, preemption victims are removed, nominations are recorded.

Decision order inside one ``CycleResult``:

* plain pod: ``PodBound`` | (``PodUnschedulable``, preemption decisions, ``PodNominated``,
  ``EntityRequeued``);
* group attempt: ``PodBound``... (leaves in forest order, pods in queue order),
  ``GroupScheduled`` | ``GroupUnschedulable``, preemption decisions, ``PodNominated``...,
  ``PodUnschedulable``... (every pending pod that did not bind), ``GroupConditionChanged``...
  (leaf PodGroups, then CompositePodGroups, pre-order), ``EntityRequeued`` (if pods remain);
* gated entity: ``PodGated`` for each pod whose gate message is new or changed.

Requeue/termination rule (see ``scheduler.queue``): a failed entity goes to backoff; it is not
retried at the same ``now`` unless something changed afterwards (an input event or a change of
its members), so ``run_until_idle`` always terminates, also with a backoff of 0.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import replace

from scheduler.cycle import (
    Cycle,
    GroupAttempt,
    PostFilterRequest,
    PostFilterResult,
    PreFilterRequest,
    compact_diagnosis,
)
from scheduler.decisions import (
    CycleResult,
    Decision,
    EntityRequeued,
    GroupConditionChanged,
    GroupScheduled,
    GroupUnschedulable,
    PodBound,
    PodGated,
    PodNominated,
    PodUnschedulable,
)
from scheduler.framework import SUCCESS, Code, Status
from scheduler.model import (
    DEFAULT_SCHEDULER,
    CompositePodGroup,
    Node,
    Pod,
    PodDisruptionBudget,
    PodGroup,
    QuotaNode,
    SchedulerConfig,
)
from scheduler.plugins import gang_scheduling, scheduling_gates
from scheduler.plugins.elastic_quota import ElasticQuota
from scheduler.preemption import Preemption
from scheduler.queue import Entity, SchedulingQueue
from scheduler.quota import Quotas
from scheduler.snapshot import make_demand
from scheduler.state import CPG, PG, State, name_of

PG_COND = "PodGroupInitiallyScheduled"
CPG_COND = "CompositePodGroupInitiallyScheduled"
KIND_PG = "PodGroup"
KIND_CPG = "CompositePodGroup"


def split_entity(ekey: str) -> tuple[str, str]:
    """("pod", "ns/name") | ("pg", "ns/name") | ("cpg", "ns/name")."""
    parts = ekey.split("/", 2)
    if len(parts) == 3 and parts[0] in (PG, CPG):
        return parts[0], f"{parts[1]}/{parts[2]}"
    return "pod", ekey


class Scheduler:
    def __init__(self, config: SchedulerConfig | None = None) -> None:
        self.config = config or SchedulerConfig()
        self.state = State(self.config)
        self.queue = SchedulingQueue()
        self.cycle = Cycle(self.state)
        self._cycle_no = 0
        self._entity_pods: dict[str, set[str]] = {}
        self._entity_of: dict[str, str] = {}
        self._pending_reason: dict[str, tuple[str, str]] = {}
        self._gated: dict[str, tuple[str, str]] = {}
        self._dirty_heap: list[str] = []
        # elastic quotas + preemption (scheduler/quota.py, scheduler/preemption.py); the plugin
        # reads config.preemption_algorithm at each call ("None" disables preemption)
        self.quotas = Quotas()
        self.elastic_quota = ElasticQuota(self.state, self.quotas)
        self.preemption = Preemption(self.state, self.quotas, self.elastic_quota)
        self.cycle.pre_filter_hook = self.elastic_quota.pre_filter
        self.cycle.post_filter_hook = self.preemption.post_filter

    # ------------------------------------------------------------- hooks
    @property
    def post_filter_hook(self) -> Callable[[PostFilterRequest], PostFilterResult | None] | None:
        return self.cycle.post_filter_hook

    @post_filter_hook.setter
    def post_filter_hook(self, fn: Callable[[PostFilterRequest], PostFilterResult | None] | None) -> None:
        self.cycle.post_filter_hook = fn

    @property
    def pre_filter_hook(self) -> Callable[[PreFilterRequest], Status | None] | None:
        return self.cycle.pre_filter_hook

    @pre_filter_hook.setter
    def pre_filter_hook(self, fn: Callable[[PreFilterRequest], Status | None] | None) -> None:
        self.cycle.pre_filter_hook = fn

    # ============================================================ inputs
    def upsert_node(self, node: Node) -> None:
        self.state.snap.upsert_node(node)
        self.queue.cluster_changed()

    def remove_node(self, name: str) -> None:
        self.state.snap.remove_node(name)
        self.queue.cluster_changed()

    def upsert_pod(self, pod: Pod, now: float) -> None:
        st = self.state
        old = st.pods.get(pod.key)
        if old is not None:
            if old == pod:
                return
            if (
                old.node_name is not None
                and old.node_name == pod.node_name
                and old.requests == pod.requests
                and old.pod_group == pod.pod_group
            ):
                st.pods[pod.key] = pod  # e.g. the echo of our own binding
                return
            self._unindex_pod(old, now)
        st.pods[pod.key] = pod
        st.podsched.forget(pod.key)
        self._sync_nomination(pod)
        # group membership is indexed whatever the feature gates say (gates are read at use)
        gk: str | None = None
        if pod.pod_group is not None:
            gk = st.group_key_of(pod)
            st.members.setdefault(gk, set()).add(pod.key)
        if pod.node_name is not None:
            st.snap.add_pod(pod.key, pod.node_name, make_demand(pod.requests), gk)
            self.queue.cluster_changed()
            self._pending_reason.pop(pod.key, None)
            if gk is not None and st.is_member(pod):
                self._touch_group(gk, now)
        else:
            st.added_at.setdefault(pod.key, now)
            self._index_pending(pod, now)
            if gk is not None and st.is_member(pod) and old is not None and old.pod_group != pod.pod_group:
                self._touch_group(gk, now)

    def remove_pod(self, key: str, now: float) -> None:
        old = self.state.pods.get(key)
        if old is None:
            return
        self._unindex_pod(old, now)
        del self.state.pods[key]
        self.state.podsched.forget(key)
        self.state.podsched.set_nominated(key, None, 0, None)
        self.state.added_at.pop(key, None)
        self._pending_reason.pop(key, None)
        self._gated.pop(key, None)

    def upsert_pod_group(self, pg: PodGroup, now: float) -> None:
        st = self.state
        old = st.pod_groups.get(pg.key)
        if old is not None:
            st.unlink_group(old.key, old.parent, old.namespace, False)
        st.pod_groups[pg.key] = pg
        st.link_group(pg.key, pg.parent, pg.namespace, False)
        self.queue.cluster_changed()
        self._rekey_groups({pg.key}, now)

    def remove_pod_group(self, key: str, now: float) -> None:
        st = self.state
        old = st.pod_groups.pop(key, None)
        if old is None:
            return
        st.unlink_group(old.key, old.parent, old.namespace, False)
        st.conditions.pop((KIND_PG, key), None)
        self.queue.cluster_changed()
        self._rekey_groups({key}, now)

    def upsert_composite(self, cpg: CompositePodGroup, now: float) -> None:
        st = self.state
        old = st.composites.get(cpg.key)
        if old is not None:
            st.unlink_group(old.key, old.parent, old.namespace, True)
        st.composites[cpg.key] = cpg
        st.link_group(cpg.key, cpg.parent, cpg.namespace, True)
        self.queue.cluster_changed()
        self._rekey_groups(self._groups_in_ns(cpg.namespace), now)

    def remove_composite(self, key: str, now: float) -> None:
        st = self.state
        old = st.composites.pop(key, None)
        if old is None:
            return
        st.unlink_group(old.key, old.parent, old.namespace, True)
        st.conditions.pop((KIND_CPG, key), None)
        self.queue.cluster_changed()
        self._rekey_groups(self._groups_in_ns(old.namespace), now)

    def upsert_pdb(self, pdb: PodDisruptionBudget) -> None:
        self.state.pdbs[pdb.key] = pdb
        self.queue.cluster_changed()

    def remove_pdb(self, key: str) -> None:
        if self.state.pdbs.pop(key, None) is not None:
            self.queue.cluster_changed()

    def upsert_quota(self, key: str, nodes: Sequence[QuotaNode]) -> None:
        """An ElasticQuota (``ElasticQuota:ns/name``) or ElasticQuotaTree (``ElasticQuotaTree:ns/name``)."""
        self.quotas.upsert(key, nodes)
        self.queue.cluster_changed()

    def remove_quota(self, key: str) -> None:
        if self.quotas.remove(key):
            self.queue.cluster_changed()

    def set_config(self, config: SchedulerConfig) -> None:
        self.config = config
        self.state.config = config
        self.state.podsched.set_config(config)
        self.queue.cluster_changed()
        # feature gates can change group membership / entity keys
        now = max(self.state.added_at.values(), default=0.0)
        for pk in sorted(self._entity_of):
            pod = self.state.pods[pk]
            self._index_pending(pod, now)
            self._mark_dirty(self._entity_of[pk])

    # ====================================================== bookkeeping
    def _sync_nomination(self, pod: Pod) -> None:
        ps = self.state.podsched
        if pod.node_name is None and pod.nominated_node is not None:
            ps.set_nominated(pod.key, pod.nominated_node, pod.priority, make_demand(pod.requests))
        elif pod.key in ps._nominated_of:
            ps.set_nominated(pod.key, None, 0, None)

    def _groups_in_ns(self, ns: str) -> set[str]:
        keys = {k for k in self.state.pod_groups if k.startswith(ns + "/")}
        keys |= {k for k in self.state.members if k.startswith(ns + "/")}
        return keys

    def _mark_dirty(self, ekey: str) -> None:
        if ekey not in self.queue.dirty:
            heapq.heappush(self._dirty_heap, ekey)
        self.queue.dirty.add(ekey)

    def _touch(self, ekey: str, now: float) -> None:
        kind, root = split_entity(ekey)
        st = self.state
        prio, seq = 0, 0
        if kind == "pod":
            p = st.pods.get(root)
            if p is not None:
                prio, seq = p.priority, p.seq
        elif kind == PG and root in st.pod_groups:
            g = st.pod_groups[root]
            prio, seq = g.priority, g.seq
        elif kind == CPG and root in st.composites:
            c = st.composites[root]
            prio, seq = c.priority, c.seq
        else:
            seq = min((st.pods[pk].seq for pk in self._entity_pods.get(ekey, ()) if pk in st.pods), default=0)
        self.queue.touch(ekey, "pod" if kind == "pod" else kind, prio, seq, now)
        self._mark_dirty(ekey)

    def _touch_group(self, gk: str, now: float) -> None:
        pg = self.state.pod_groups.get(gk)
        ekey = self.state.chain(pg).entity if pg is not None else f"{PG}/{gk}"
        if self._entity_pods.get(ekey):
            self._touch(ekey, now)

    def _index_pending(self, pod: Pod, now: float) -> None:
        st = self.state
        if not st.is_member(pod) and pod.scheduler_name != DEFAULT_SCHEDULER:
            self._remove_from_entity(pod.key, now)
            return  # another scheduler's pod
        ekey = st.entity_of(pod)
        cur = self._entity_of.get(pod.key)
        if cur is not None and cur != ekey:
            self._remove_from_entity(pod.key, now)
        self._entity_of[pod.key] = ekey
        self._entity_pods.setdefault(ekey, set()).add(pod.key)
        self._touch(ekey, now)

    def _remove_from_entity(self, pod_key: str, now: float) -> None:
        ekey = self._entity_of.pop(pod_key, None)
        if ekey is None:
            return
        s = self._entity_pods.get(ekey)
        if s is not None:
            s.discard(pod_key)
            if not s:
                del self._entity_pods[ekey]
                self.queue.drop(ekey)
                return
        self._touch(ekey, now)

    def _unindex_pod(self, old: Pod, now: float) -> None:
        st = self.state
        gk = st.group_key_of(old) if old.pod_group is not None else None
        if gk is not None:
            s = st.members.get(gk)
            if s is not None:
                s.discard(old.key)
                if not s:
                    del st.members[gk]
        if st.snap.has_pod(old.key):
            st.snap.remove_pod(old.key)
            self.queue.cluster_changed()
            if gk is not None and st.is_member(old):
                self._touch_group(gk, now)
        else:
            self._remove_from_entity(old.key, now)
            if gk is not None and st.is_member(old):
                self._touch_group(gk, now)

    def _rekey_groups(self, group_keys: set[str], now: float) -> None:
        st = self.state
        for gk in sorted(group_keys):
            for pk in sorted(st.members.get(gk, ())):
                pod = st.pods.get(pk)
                if pod is not None and pod.node_name is None:
                    self._index_pending(pod, now)
            pg = st.pod_groups.get(gk)
            if pg is not None:
                self._touch_group(gk, now)

    # ============================================================ running
    def _order(self, keys: set[str]) -> list[Pod]:
        st = self.state
        if len(keys) == 1:
            (k,) = keys
            p1 = st.pods.get(k)
            return [p1] if p1 is not None else []
        pods = [st.pods[k] for k in keys if k in st.pods]
        pods.sort(key=lambda p: (-p.priority, st.added_at.get(p.key, 0.0), p.seq, p.key))
        return pods

    def _pre_enqueue(self, ekey: str, pods: list[Pod]) -> Status:
        st = self.state
        for p in pods:
            s = scheduling_gates.pre_enqueue(p)
            if not s.ok:
                return s
        kind, root = split_entity(ekey)
        if kind == PG:
            pg = st.pod_groups.get(root)
            if pg is None:
                return gang_scheduling.group_not_found(name_of(root))
            if pg.is_gang and st.all_pods_count(root) < pg.minimum:
                return gang_scheduling.min_count_not_met()
        elif kind == CPG:
            cpg = st.composites.get(root)
            if cpg is not None and self._ready_children(root, set()) < cpg.minimum:
                return gang_scheduling.tree_quorum_not_met(name_of(root))
        return SUCCESS

    def _ready_children(self, cpg_key: str, seen: set[str]) -> int:
        st = self.state
        seen.add(cpg_key)
        n = 0
        for kind, ck in st.children(cpg_key):
            if kind == PG:
                pg = st.pod_groups[ck]
                if st.all_pods_count(ck) >= pg.minimum:
                    n += 1
            elif ck not in seen:
                c = st.composites[ck]
                if self._ready_children(ck, seen) >= c.minimum:
                    n += 1
        return n

    def _result(
        self,
        ekey: str,
        now: float,
        result: str,
        decisions: list[Decision],
        durations: dict[str, float] | None = None,
    ) -> CycleResult:
        self._cycle_no += 1
        return CycleResult(self._cycle_no, ekey, now, result, tuple(decisions), durations or {})

    def run_cycle(self, now: float) -> CycleResult | None:
        q = self.queue
        self.state.snap.refresh()
        q.promote(now)
        while self._dirty_heap:
            ekey = heapq.heappop(self._dirty_heap)
            if ekey not in q.dirty:
                continue
            q.dirty.discard(ekey)
            e = q.entities.get(ekey)
            members = self._entity_pods.get(ekey)
            if e is None or not members:
                if e is not None:
                    q.drop(ekey)
                continue
            if e.kind == "pod":  # fast path: a plain pod is gated only by its scheduling gates
                p0 = self.state.pods.get(ekey)
                if p0 is not None and not p0.scheduling_gates and ekey not in self._gated:
                    q.activate(e, now)
                    continue
            pods = self._order(members)
            s = self._pre_enqueue(ekey, pods)
            if s.ok:
                for p in pods:
                    if self._gated.pop(p.key, None) is not None:
                        self._pending_reason.pop(p.key, None)
                q.activate(e, now)
                continue
            q.gate(e)
            msg = (s.plugin, s.message)
            decisions: list[Decision] = []
            for p in pods:
                if self._gated.get(p.key) != msg:
                    decisions.append(PodGated(p.key, s.plugin, s.message))
                self._gated[p.key] = msg
                self._pending_reason[p.key] = msg
            if decisions:
                return self._result(ekey, now, "gated", decisions)
        while True:
            e = q.pop(now)
            if e is None:
                return None
            members = self._entity_pods.get(e.key)
            if not members:
                q.drop(e.key)
                continue
            if e.kind == "pod":
                return self._attempt_pod(e, self.state.pods[e.key], now)
            kind, root = split_entity(e.key)
            return self._attempt_group(e, kind, root, self._order(members), now)

    def run_until_idle(self, now: float, max_cycles: int = 1_000_000) -> list[CycleResult]:
        out: list[CycleResult] = []
        for _ in range(max_cycles):
            r = self.run_cycle(now)
            if r is None:
                break
            out.append(r)
        return out

    def next_timer(self, now: float) -> float | None:
        return self.queue.next_timer(now)

    # -------------------------------------------------------- plain pods
    def _bind(self, pod: Pod, node: str, now: float) -> Pod:
        key = pod.key
        st = self.state
        bound = _copy_pod(pod, node_name=node, nominated_node=None, start_time=now)
        st.pods[key] = bound
        st.podsched.forget(key)
        if pod.nominated_node is not None:
            st.podsched.set_nominated(key, None, 0, None)
        self._pending_reason.pop(key, None)
        ekey = self._entity_of.pop(key, None)
        if ekey is not None:
            s = self._entity_pods.get(ekey)
            if s is not None:
                s.discard(key)
                if not s:
                    del self._entity_pods[ekey]
        st.added_at.pop(key, None)
        return bound

    def _apply_post(self, post: PostFilterResult | None, now: float, decisions: list[Decision]) -> bool:
        """Apply a PostFilter result; True when waiting on preemption."""
        if post is None:
            return False
        decisions.extend(post.decisions)
        waiting = post.status.ok
        if waiting:
            for v in post.victims:
                self.remove_pod(v, now)
            for pk in sorted(post.nominations):
                p = self.state.pods.get(pk)
                node = post.nominations[pk]
                if p is not None and p.nominated_node != node:
                    np_ = replace(p, nominated_node=node)
                    self.state.pods[pk] = np_
                    self.state.podsched.forget(pk)
                    self._sync_nomination(np_)
                    decisions.append(PodNominated(pk, node))
        return waiting

    def _requeue_failure(
        self, e: Entity, size: int, now: float, *, is_error: bool, needs_change: bool
    ) -> EntityRequeued:
        cfg = self.config
        until = self.queue.requeue_failure(
            e,
            now,
            size,
            cfg.backoff_initial_seconds,
            cfg.backoff_max_seconds,
            is_error=is_error,
            needs_change=needs_change,
            flush_seconds=cfg.unschedulable_flush_seconds,
        )
        n = e.errors if is_error else e.attempts
        if needs_change:
            qname = "unschedulable"
        else:
            qname = "backoff" if until > now else "active"
        return EntityRequeued(e.key, qname, n, until)

    def _attempt_pod(self, e: Entity, pod: Pod, now: float) -> CycleResult:
        node, st, _diag, post = self.cycle.run_pod(pod, now)
        if node >= 0:
            name = self.state.snap.names[node]
            self._bind(pod, name, now)
            self.queue.drop(e.key)
            return self._result(e.key, now, "scheduled", [PodBound(pod.key, name, None)])
        decisions: list[Decision] = [PodUnschedulable(pod.key, reason_of(st), st.message)]
        waiting = self._apply_post(post, now, decisions)
        self._pending_reason[pod.key] = (st.plugin, st.message)
        if pod.key not in self.state.pods:  # removed by its own post filter (should not happen)
            self.queue.drop(e.key)
            return self._result(e.key, now, "unschedulable", decisions)
        # waiting on preemption: the victims' removal is the change it waits for -> backoff only
        decisions.append(
            self._requeue_failure(
                e, 1, now, is_error=st.is_error, needs_change=not st.is_error and not waiting
            )
        )
        result = "waiting-on-preemption" if waiting else ("error" if st.is_error else "unschedulable")
        return self._result(e.key, now, result, decisions)

    # ------------------------------------------------------------ groups
    def _attempt_group(self, e: Entity, kind: str, root: str, pods: list[Pod], now: float) -> CycleResult:
        st = self.state
        queued: dict[str, list[Pod]] = {}
        for p in pods:
            queued.setdefault(st.group_key_of(p), []).append(p)
        attempt = self.cycle.run_group(kind, root, queued, now)
        decisions: list[Decision] = []
        post = attempt.post
        waiting = False
        statuses = dict(attempt.results)
        root_status = attempt.status
        bound: list[str] = []
        failed: list[tuple[Pod, Status]] = []
        if root_status.ok:
            for leaf in attempt.leaves:
                lst = statuses.get(f"{PG}:{leaf}", root_status)
                o = attempt.outcomes.get(leaf)
                assigned = dict(o.assigned) if (o is not None and lst.ok) else {}
                for p in queued.get(leaf, ()):
                    if p.key in assigned:
                        name = st.snap.names[assigned[p.key]]
                        self._bind(p, name, now)
                        decisions.append(PodBound(p.key, name, leaf))
                        bound.append(p.key)
                    else:
                        own = o.pod_status.get(p.key) if (o is not None and lst.ok) else None
                        failed.append((p, own if own is not None else lst))
            decisions.append(GroupScheduled(root, tuple(bound), attempt.placement or None))
        else:
            if post is not None and post.status.message:
                suffix = post.status.message
                statuses = {k: v.append_reason(suffix) for k, v in statuses.items()}
                root_status = root_status.append_reason(suffix)
            reason = "SchedulerError" if root_status.is_error else "Unschedulable"
            diag = compact_diagnosis(attempt, st.snap.n, len(pods))
            decisions.append(GroupUnschedulable(root, reason, root_status.message, diag))
            waiting = self._apply_post(post, now, decisions)
            for leaf in attempt.leaves:
                lst = statuses.get(f"{PG}:{leaf}", root_status)
                for p in queued.get(leaf, ()):
                    failed.append((p, lst))
            if not waiting:
                for p, _ in failed:
                    cur = st.pods.get(p.key)
                    if cur is not None and cur.nominated_node is not None:
                        st.pods[p.key] = replace(cur, nominated_node=None)
                        st.podsched.forget(p.key)
                        st.podsched.set_nominated(p.key, None, 0, None)
                        decisions.append(PodNominated(p.key, None))
        for p, s in failed:
            if p.key not in st.pods:
                continue
            decisions.append(PodUnschedulable(p.key, reason_of(s), s.message))
            self._pending_reason[p.key] = (s.plugin, s.message)
        decisions.extend(self._conditions(attempt, statuses))
        remaining = self._entity_pods.get(e.key)
        if not remaining:
            self.queue.drop(e.key)
        elif root_status.ok:
            self.queue.requeue_immediately(e)
            decisions.append(EntityRequeued(e.key, "active", e.attempts, None))
        else:
            decisions.append(
                self._requeue_failure(
                    e, len(remaining), now, is_error=root_status.is_error, needs_change=False
                )
            )
        if root_status.ok:
            result = "scheduled"
        elif waiting:
            result = "waiting-on-preemption"
        elif root_status.is_error:
            result = "error"
        else:
            result = "unschedulable"
        c = attempt.counters
        durations: dict[str, float] = {}
        if c.generated:
            durations = {"placements_generated": float(c.generated), "placements_scored": float(c.scored)}
        return self._result(e.key, now, result, decisions, durations)

    def _conditions(self, attempt: GroupAttempt, statuses: dict[str, Status]) -> list[Decision]:
        st = self.state
        out: list[Decision] = []
        for leaf in attempt.leaves:
            if leaf in st.pod_groups:
                s = statuses.get(f"{PG}:{leaf}")
                if s is not None:
                    d = self._set_condition(KIND_PG, leaf, PG_COND, s)
                    if d is not None:
                        out.append(d)
        if st.cpg_on:
            for ck in attempt.cpgs:
                if ck in st.composites:
                    s = statuses.get(f"{CPG}:{ck}")
                    if s is not None:
                        d = self._set_condition(KIND_CPG, ck, CPG_COND, s)
                        if d is not None:
                            out.append(d)
        return out

    def _set_condition(self, kind: str, key: str, ctype: str, s: Status) -> Decision | None:
        if s.ok:
            new = ("True", "Scheduled", "")
        elif s.is_error:
            new = ("False", "SchedulerError", s.message)
        else:
            new = ("False", "Unschedulable", s.message)
        conds = self.state.conditions.setdefault((kind, key), {})
        cur = conds.get(ctype)
        if cur is not None and (cur[0] == "True" and new[0] != "True" or cur == new):
            return None
        conds[ctype] = new
        return GroupConditionChanged(kind, key, ctype, *new)

    # ============================================================ reading
    def pod(self, key: str) -> Pod | None:
        return self.state.pods.get(key)

    def pods(self) -> list[Pod]:
        return [self.state.pods[k] for k in sorted(self.state.pods)]

    def seed_condition(self, kind: str, key: str, ctype: str, status: str, reason: str, message: str) -> None:
        """Record a condition written earlier (e.g. by a previous scheduler process), so that a
        True PodGroupInitiallyScheduled is never regressed after a restart."""
        self.state.conditions.setdefault((kind, key), {})[ctype] = (status, reason, message)

    def group_conditions(self, key: str) -> dict[str, tuple[str, str, str]]:
        c = self.state.conditions.get((KIND_PG, key))
        if c is None:
            c = self.state.conditions.get((KIND_CPG, key))
        return dict(c) if c else {}

    def pending_reason(self, pod_key: str) -> tuple[str, str] | None:
        p = self.state.pods.get(pod_key)
        if p is None or p.node_name is not None:
            return None
        return self._pending_reason.get(pod_key)

    def node_usage(self) -> list[tuple[str, dict[str, int], dict[str, int]]]:
        return self.state.snap.usage()


_POD_SLOTS: tuple[str, ...] = tuple(Pod.__slots__)
_set = object.__setattr__


def _copy_pod(pod: Pod, **changes: object) -> Pod:
    """``dataclasses.replace`` for the frozen, slotted Pod without re-running ``__init__``."""
    new = object.__new__(Pod)
    for name in _POD_SLOTS:
        _set(new, name, changes[name] if name in changes else getattr(pod, name))
    return new


def reason_of(s: Status) -> str:
    return "SchedulerError" if s.code == Code.ERROR else "Unschedulable"
