"""The cycle: a plain pod's attempt and a group attempt (validation, PreFilter, root algorithm,
PostFilter), leaving the snapshot as the facade expects."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from scheduler import gpushare
from scheduler.cycle.composite import Algorithm, complete_results, results_ok
from scheduler.cycle.diagnosis import pod_failure
from scheduler.cycle.results import Counters, GroupAttempt
from scheduler.cycle.validation import validate
from scheduler.framework import (
    SUCCESS,
    Code,
    Diagnosis,
    PostFilterRequest,
    PostFilterResult,
    PreFilterRequest,
    Profile,
    Status,
    plain_checks,
    unschedulable,
)
from scheduler.messages import MSG_NO_PODS_SCHEDULABLE
from scheduler.model import CompositePodGroup, Pod, PodGroup
from scheduler.plugins import gang_scheduling
from scheduler.state import CPG, PG, State


class Cycle:
    """Runs attempts against a ``State``; the facade applies the outcome."""

    def __init__(self, state: State, profile: Profile) -> None:
        self.state = state
        self.profile = profile

    @property
    def profile(self) -> Profile:
        return self._profile

    @profile.setter
    def profile(self, profile: Profile) -> None:
        self._profile = profile
        self._plain_pre_filter = plain_checks(profile.pre_filter)  # PreFilter's fast path for plain pods

    def pre_filter(self, request: PreFilterRequest) -> Status | None:
        """PreFilter extension point: the first failing plugin's status, None when all pass."""
        return self.profile.run_pre_filter(request)

    def post_filter(self, request: PostFilterRequest) -> PostFilterResult | None:
        """PostFilter / PodGroupPostFilter extension point (None: no plugin acted)."""
        return self.profile.run_post_filter(request)

    # ------------------------------------------------------------ plain
    def run_pod(self, pod: Pod, now: float) -> tuple[int, Status, Diagnosis | None, PostFilterResult | None]:
        """One plain pod: PreFilter, filter + score + select, PostFilter on failure.

        Returns ``(node index or -1, status, diagnosis, post-filter result)``. On success the pod
        is assumed on the node in the snapshot (the facade binds it); on failure the status
        message is the fit error (``0/N nodes are available: ...``) with the PostFilter's message
        appended, and the diagnosis says which plugin rejected how many nodes."""
        state = self.state
        key = pod.key
        plain = self._plain_pre_filter
        pre = None
        if plain is None or not all(passes(pod) for passes in plain):
            pre = self.pre_filter(PreFilterRequest("pod", key, (pod,), now, state))
        if pre is not None and not pre.ok:
            pi = state.podsched.info(pod)
            diag = Diagnosis(
                state.snap.n, {pre.plugin: state.snap.n} if pre.plugin else {}, {}, pre_filter_msg=pre.message
            )
            st = Status(
                pre.code if pre.code != Code.WAIT else Code.UNSCHEDULABLE, (diag.fit_error(),), pre.plugin
            )
        else:
            node, pi = state.podsched.schedule(pod)
            if node >= 0:
                devs = state.podsched.gpu_choice.get(key)
                demand = pi.demand if not devs else gpushare.demand_with(pod, devs)
                state.snap.assume(key, node, demand, None)
                return node, SUCCESS, None, None
            diag = state.podsched.diagnose(pi, None)
            st = pod_failure(diag)
        post: PostFilterResult | None = None
        if st.code == Code.UNSCHEDULABLE:

            def reschedule() -> tuple[Status, dict[str, str]]:
                n2, _ = state.podsched.schedule(pod)
                if n2 < 0:
                    return pod_failure(state.podsched.diagnose(state.podsched.info(pod), None)), {}
                return SUCCESS, {pod.key: state.snap.names[n2]}

            post = self.post_filter(
                PostFilterRequest(
                    "pod",
                    pod.key,
                    (pod,),
                    pod.priority,
                    pod.preemption_policy,
                    st,
                    diag,
                    now,
                    state,
                    reschedule,
                )
            )
            if post is not None and post.status.message:
                diag.post_filter_msg = post.status.message
                st = Status(st.code, (diag.fit_error(),), st.plugin)
        return -1, st, diag, post

    # ------------------------------------------------------------ groups
    def run_root(
        self, root_kind: str, root: str, queued: Mapping[str, Sequence[Pod]]
    ) -> tuple[Algorithm, Status, bool]:
        """Root algorithm; reservations of a Success stay in the snapshot (caller's mark)."""
        state = self.state
        alg = Algorithm(state, queued, self.profile)
        if root_kind == PG:
            o = alg.schedule_pg(state.pod_groups[root], None, standalone=True)
            st, any_sched = o.status, o.any_scheduled
        else:
            st = alg.schedule_cpg(state.composites[root], None)
            any_sched = bool(alg.successful_proposals(root, alg.results, alg.outcomes)) if st.ok else False
        if st.ok and not any_sched:
            st = unschedulable(MSG_NO_PODS_SCHEDULABLE, gang_scheduling.NAME)
        return alg, st, any_sched

    def run_group(
        self, root_kind: str, root: str, queued: Mapping[str, Sequence[Pod]], now: float
    ) -> GroupAttempt:
        """One group attempt: validation, PreFilter, the root algorithm, PostFilter.

        Returns a ``GroupAttempt``: the root status, the completed status of every group of the
        tree (§5.1 step 7, for conditions and pod messages), each leaf's outcome (the pods to
        bind on success, per-pod failures otherwise), the placement counters and the first
        fitting-nowhere diagnosis (for ``compact_diagnosis``). The snapshot keeps the root's
        reservations only on Success (the facade then binds them); otherwise it is restored."""
        state = self.state
        snap = state.snap
        leaves: list[str]
        cpgs: list[str]
        if root_kind == PG:
            leaves, cpgs = [root], []
        else:
            leaves, cpgs = state.tree(root)
        mark = snap.backup()
        vst = validate(state, root_kind, root, leaves, cpgs, queued)
        if not vst.ok:
            snap.restore(mark)
            results = {f"{PG}:{k}": vst for k in leaves}
            results.update({f"{CPG}:{k}": vst for k in cpgs})
            return GroupAttempt(
                root_kind, root, vst, False, leaves, cpgs, results, {}, Counters(), validation_error=True
            )
        pre = None
        if self.profile.pre_filter:
            kind = "podgroup" if root_kind == PG else "compositepodgroup"
            pods_all = tuple(p for lk in leaves for p in queued.get(lk, ()))
            pre = self.pre_filter(PreFilterRequest(kind, root, pods_all, now, state))
        if pre is not None and not pre.ok:
            alg = Algorithm(state, queued, self.profile)
            st, any_sched = (
                (pre if pre.code != Code.WAIT else Status(Code.UNSCHEDULABLE, pre.reasons, pre.plugin)),
                False,
            )
        else:
            alg, st, any_sched = self.run_root(root_kind, root, queued)
        if st.ok:
            snap.release(mark)
        else:
            snap.restore(mark)
        results = complete_results(state, root_kind, root, st, alg.results)
        attempt = GroupAttempt(root_kind, root, st, any_sched, leaves, cpgs, results, alg.outcomes, alg.c)
        if st.ok:
            if root_kind == PG:
                ro = alg.outcomes.get(root)
                attempt.placement = ro.placement if ro is not None else None
            else:
                attempt.placement = alg.placement_of.get(root) or None
        attempt.diag = next((o.diag for o in alg.outcomes.values() if o.diag is not None), None)
        if st.code == Code.UNSCHEDULABLE:
            root_obj: PodGroup | CompositePodGroup = (
                state.pod_groups[root] if root_kind == PG else state.composites[root]
            )
            pods = tuple(p for lk in leaves for p in queued.get(lk, ()))

            def reschedule() -> tuple[Status, dict[str, str]]:
                m2 = snap.backup()
                try:
                    a2, s2, _ = self.run_root(root_kind, root, queued)
                    props: dict[str, str] = {}
                    if s2.ok:
                        for o in a2.outcomes.values():
                            if results_ok(a2, o.key):
                                props.update({pk: snap.names[nd] for pk, nd in o.assigned})
                    return s2, props
                finally:
                    snap.restore(m2)

            attempt.post = self.post_filter(
                PostFilterRequest(
                    "podgroup" if root_kind == PG else "compositepodgroup",
                    root,
                    pods,
                    root_obj.priority,
                    root_obj.preemption_policy,
                    st,
                    attempt.diag,
                    now,
                    state,
                    reschedule,
                )
            )
        return attempt
