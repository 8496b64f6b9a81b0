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
* status (entity ``status``, gate PodGroupSatisfiedCondition): ``GroupSatisfiedChanged`` for each
  PodGroup whose live condition changed since the last cycle (``scheduler.satisfied``).

Requeue/termination rule (see ``scheduler.queue``): a failed entity goes to backoff; it is not
retried at the same ``now`` unless something changed afterwards (an input event or a change of
its members), so ``run_until_idle`` always terminates, also with a backoff of 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from scheduler import gpushare
from scheduler.conditions import KIND_CPG, KIND_PG, gated_condition, group_conditions
from scheduler.cycle import Cycle, PostFilterResult, compact_diagnosis, member_status, reason_of
from scheduler.cycle.why import rank_codes, why_of_group
from scheduler.decisions import (
    CycleResult,
    Decision,
    EntityRequeued,
    GroupScheduled,
    GroupUnschedulable,
    PodBound,
    PodGated,
    PodNominated,
    PodUnschedulable,
)
from scheduler.framework import Profile, Status, plain_checks
from scheduler.model import (
    CompositePodGroup,
    Node,
    Pod,
    PodDisruptionBudget,
    PodGroup,
    QuotaNode,
    SchedulerConfig,
    copy_pod,
)
from scheduler.plugins.elastic_quota import ElasticQuota
from scheduler.preemption import Preemption
from scheduler.profile import default_profile
from scheduler.queue import Entity, SchedulingQueue
from scheduler.quota import Quotas
from scheduler.reading import Reading
from scheduler.reason_codes import codes_of
from scheduler.satisfied import satisfied_changes
from scheduler.snapshot import make_demand
from scheduler.state import CPG, PG, State, split_entity


class Scheduler(Reading):
    def __init__(self, config: SchedulerConfig | None = None) -> None:
        self.config = config or SchedulerConfig()
        self.state = State(self.config)
        self.queue = SchedulingQueue()
        self._cycle_no = 0
        # elastic quotas + preemption (scheduler/quota.py, scheduler/preemption/); the PostFilter
        # plugin reads config.preemption_algorithm at each call ("None" disables preemption)
        self.quotas = Quotas()
        self.elastic_quota = ElasticQuota(self.state, self.quotas)
        self.preemption = Preemption(self.state, self.quotas, self.elastic_quota)
        self.profile = default_profile(self.elastic_quota, self.preemption)
        self.cycle = Cycle(self.state, self.profile)
        self._set_profile(self.profile)

    def use_profile(self, profile: Profile) -> None:
        """Run every later cycle with ``profile``'s plugins (``scheduler.profile`` builds the
        default; change it with ``dataclasses.replace(scheduler.profile, ...)``). Every queued
        entity's PreEnqueue verdict is re-evaluated, as after a cluster change."""
        self._set_profile(profile)
        self.queue.cluster_changed()
        for ekey in sorted(self.queue.members):
            self.queue.mark_dirty(ekey)

    def _set_profile(self, profile: Profile) -> None:
        self.profile = profile
        self.cycle.profile = profile
        self.state.podsched.set_plugins(profile.filter, profile.score, profile.pod_filter, profile.pod_score)
        self._plain_checks = plain_checks(profile.pre_enqueue)  # the queue's fast path for plain pods

    # ============================================================ inputs
    def upsert_node(self, node: Node) -> None:
        self.state.snap.upsert_node(node)
        self.queue.cluster_changed()

    def remove_node(self, name: str) -> None:
        self.state.snap.remove_node(name)
        self.queue.cluster_changed()

    def upsert_pod(self, pod: Pod, now: float) -> None:
        st = self.state
        key = pod.key
        old = st.pods.get(key)
        if old is not None:
            if old == pod:
                return
            if (
                old.node_name is not None
                and old.node_name == pod.node_name
                and old.requests == pod.requests
                and old.pod_group == pod.pod_group
            ):
                st.pods[key] = pod  # e.g. the echo of our own binding
                return
            self._unindex_pod(old, now)
            st.podsched.workload.remove(old)
        st.pods[key] = pod
        st.podsched.workload.add(pod)
        st.podsched.forget(key)
        self._sync_nomination(pod)
        # group membership is indexed whatever the feature gates say (gates are read at use)
        gk: str | None = None
        if pod.pod_group is not None:
            gk = st.group_key_of(pod)
            st.members.setdefault(gk, set()).add(key)
        if pod.node_name is not None:
            st.snap.add_pod(key, pod.node_name, gpushare.bound_demand(pod), gk)
            self.queue.cluster_changed()
            self.queue.pending_reason.pop(key, None)
            if gk is not None and st.is_member(pod):
                self._touch_group(gk, now)
        else:
            st.added_at.setdefault(key, now)
            self._index_pending(pod, now)
            if gk is not None and st.is_member(pod) and old is not None and old.pod_group != pod.pod_group:
                self._touch_group(gk, now)

    def remove_pod(self, key: str, now: float) -> None:
        st = self.state
        old = st.pods.get(key)
        if old is None:
            return
        self._unindex_pod(old, now)
        del st.pods[key]
        ps = st.podsched
        ps.workload.remove(old)
        ps.forget(key)
        ps.set_nominated(key, None, 0, None)
        st.added_at.pop(key, None)
        self.queue.pending_reason.pop(key, None)
        self.queue.gated.pop(key, None)

    def upsert_pod_group(self, pg: PodGroup, now: float) -> None:
        st = self.state
        old = st.pod_groups.get(pg.key)
        if old is not None:
            st.unlink_group(old.key, old.parent, old.namespace, False)
        st.pod_groups[pg.key] = pg
        st.snap.touched_groups.add(pg.key)  # PodGroupSatisfied: created, or minCount edited
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
        profile_changed = (config.profile, config.scheduler_name, config.also_serves) != (
            self.config.profile,
            self.config.scheduler_name,
            self.config.also_serves,
        )
        self.config = config
        self.state.config = config
        self.state.podsched.set_config(config)
        self.queue.cluster_changed()
        self.state.snap.touched_groups.update(self.state.pod_groups)  # a gate may have turned on
        # feature gates can change group membership / entity keys
        now = max(self.state.added_at.values(), default=0.0)
        keys = list(self.queue.entity_of)
        if profile_changed:  # every pending pod: pods of another scheduler join or leave the queue
            keys = [k for k, p in self.state.pods.items() if p.node_name is None]
        for pk in sorted(keys):
            self._index_pending(self.state.pods[pk], now)
            if pk in self.queue.entity_of:
                self.queue.mark_dirty(self.queue.entity_of[pk])

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
            seq = min(
                (st.pods[pk].seq for pk in self.queue.members.get(ekey, ()) if pk in st.pods), default=0
            )
        self._requeue(ekey, kind, prio, seq, now)

    def _requeue(self, ekey: str, kind: str, prio: int, seq: int, now: float) -> None:
        self.queue.touch(ekey, kind, prio, seq, now)
        self.queue.mark_dirty(ekey)

    def _touch_group(self, gk: str, now: float) -> None:
        pg = self.state.pod_groups.get(gk)
        ekey = self.state.chain(pg).entity if pg is not None else f"{PG}/{gk}"
        if self.queue.members.get(ekey):
            self._touch(ekey, now)

    def _index_pending(self, pod: Pod, now: float) -> None:
        """Queue pending ``pod`` (the pod the table holds) in its entity."""
        st = self.state
        cfg = self.config
        key = pod.key
        if not cfg.serves(pod.scheduler_name) and (cfg.scheduler_name or not st.is_member(pod)):
            self._remove_from_entity(key, now)
            return  # another scheduler's pod
        ekey = st.entity_of(pod)
        q = self.queue
        cur = q.entity_of.get(key)
        if cur is not None and cur != ekey:
            self._remove_from_entity(key, now)
        q.join(key, ekey)
        if ekey == key:  # a plain pod is its own entity: ``_touch`` without reparsing the key
            self._requeue(key, "pod", pod.priority, pod.seq, now)
        else:
            self._touch(ekey, now)

    def _remove_from_entity(self, pod_key: str, now: float) -> None:
        ekey, emptied = self.queue.leave(pod_key)
        if ekey is None:
            return
        if emptied:
            self.queue.drop(ekey)
            return
        self._touch(ekey, now)

    def _unindex_pod(self, old: Pod, now: float) -> None:
        st = self.state
        key = old.key
        gk = st.group_key_of(old) if old.pod_group is not None else None
        if gk is not None:
            s = st.members.get(gk)
            if s is not None:
                s.discard(key)
                if not s:
                    del st.members[gk]
        if st.snap.has_pod(key):
            st.snap.remove_pod(key)
            self.queue.cluster_changed()
            if gk is not None and st.is_member(old):
                self._touch_group(gk, now)
        else:
            self._remove_from_entity(key, now)
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

    def _result(
        self,
        ekey: str,
        now: float,
        result: str,
        decisions: list[Decision],
        placement_counts: dict[str, int] | None = None,
    ) -> CycleResult:
        self._cycle_no += 1
        return CycleResult(self._cycle_no, ekey, now, result, tuple(decisions), placement_counts or {})

    def run_cycle(self, now: float) -> CycleResult | None:
        q = self.queue
        self.state.snap.refresh()
        if self.state.snap.touched_groups and (sat := satisfied_changes(self.state)):
            return self._result("status", now, "status", sat)
        q.promote(now)
        while (ekey := q.pop_dirty()) is not None:
            e = q.entities.get(ekey)
            members = self.queue.members.get(ekey)
            if e is None or not members:
                if e is not None:
                    q.drop(ekey)
                continue
            if e.kind == "pod" and self._plain_checks is not None:  # fast path for plain pods
                p0 = self.state.pods.get(ekey)
                if p0 is not None and ekey not in q.gated and all(c(p0) for c in self._plain_checks):
                    q.activate(e, now)
                    continue
            pods = self._order(members)
            s = self.profile.run_pre_enqueue(self.state, ekey, pods)
            if s.ok:
                for p in pods:
                    if self.queue.gated.pop(p.key, None) is not None:
                        self.queue.pending_reason.pop(p.key, None)
                q.activate(e, now)
                continue
            q.gate(e)
            msg = (s.plugin, s.message)
            report = self.state.gate("SchedulerPreEnqueuePodStatus")  # KEP-5501
            decisions: list[Decision] = []
            for p in pods:
                if self.queue.gated.get(p.key) != msg:
                    decisions.append(PodGated(p.key, s.plugin, s.message, report, *gated_condition(p, s)))
                self.queue.gated[p.key] = msg
                self.queue.pending_reason[p.key] = msg
            if decisions:
                return self._result(ekey, now, "gated", decisions)
        while True:
            e = q.pop(now)
            if e is None:
                return None
            members = self.queue.members.get(e.key)
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
        bound = copy_pod(pod, node_name=node, nominated_node=None, start_time=now)
        st.pods[key] = bound
        st.podsched.forget(key)
        if pod.nominated_node is not None:
            st.podsched.set_nominated(key, None, 0, None)
        self.queue.pending_reason.pop(key, None)
        self.queue.leave(key)
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
            key = e.key  # a plain pod's entity is keyed by the pod's key
            name = self.state.snap.names[node]
            pod, gpus = gpushare.with_devices(pod, self.state.podsched.gpu_choice.pop(key, None))
            self._bind(pod, name, now)
            self.queue.drop(key)
            return self._result(key, now, "scheduled", [PodBound(key, name, None, gpus)])
        decisions: list[Decision] = [
            PodUnschedulable(pod.key, reason_of(st), st.message, codes_of(st.message, error=st.is_error))
        ]
        waiting = self._apply_post(post, now, decisions)
        self.queue.pending_reason[pod.key] = (st.plugin, st.message)
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
        post, waiting = attempt.post, False
        completed = attempt.results  # each group's status before the PostFilter message
        statuses, root_status = dict(completed), attempt.status
        bound: list[str] = []
        failed: list[tuple[Pod, Status]] = []
        if root_status.ok:
            for leaf in attempt.leaves:
                lst = statuses.get(f"{PG}:{leaf}", root_status)
                o = attempt.outcomes.get(leaf)
                assigned = dict(o.assigned) if (o is not None and lst.ok) else {}
                devices = o.devices if o is not None else {}
                for p in queued.get(leaf, ()):
                    if p.key in assigned:
                        name = st.snap.names[assigned[p.key]]
                        p, gpus = gpushare.with_devices(p, devices.get(p.key))
                        self._bind(p, name, now)
                        decisions.append(PodBound(p.key, name, leaf, gpus))
                        bound.append(p.key)
                    else:
                        failed.append((p, member_status(o, p.key, lst, lst)))
            decisions.append(GroupScheduled(root, tuple(bound), attempt.placement or None))
        else:
            if post is not None and post.status.message:
                suffix = post.status.message
                statuses = {k: v.append_reason(suffix) for k, v in statuses.items()}
                root_status = root_status.append_reason(suffix)
            reason = "SchedulerError" if root_status.is_error else "Unschedulable"
            diag = compact_diagnosis(attempt, st.snap.n, len(pods))
            # the group's message may name only the gang or placement verdict: the first pod that
            # fitted nowhere says which node filters (resources, taints, ...) bound it
            detail = attempt.diag.fit_error() if attempt.diag is not None else ""
            codes = codes_of(f"{root_status.message}\n{detail}", error=root_status.is_error)
            seen: dict[str, object] = {}  # what the scheduler saw: per-node exclusions, compressed
            why = why_of_group(st, attempt, queued, pods, codes, root_status.message, seen)
            codes = rank_codes(codes, why)
            decisions.append(GroupUnschedulable(root, reason, root_status.message, diag, codes, why, seen))
            waiting = self._apply_post(post, now, decisions)
            for leaf in attempt.leaves:
                o = attempt.outcomes.get(leaf)
                before = completed.get(f"{PG}:{leaf}", attempt.status)
                after = statuses.get(f"{PG}:{leaf}", root_status)
                failed.extend((p, member_status(o, p.key, before, after)) for p in queued.get(leaf, ()))
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
            decisions.append(
                PodUnschedulable(p.key, reason_of(s), s.message, codes_of(s.message, error=s.is_error))
            )
            self.queue.pending_reason[p.key] = (s.plugin, s.message)
        decisions.extend(group_conditions(st, attempt, statuses))
        remaining = self.queue.members.get(e.key)
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
        counts: dict[str, int] = {}
        if c.generated:
            counts = {"placements_generated": c.generated, "placements_scored": c.scored}
        return self._result(e.key, now, result, decisions, counts)
