"""SchedulerConfig ``schedulerName`` (the profile podledger serves) and ``controllerEmulation``:
unset, everything is as before (the profile is default-scheduler; the manifest and the config
hash are unchanged); set, pods of other schedulers are never queued, gang members included."""

from __future__ import annotations

from dataclasses import replace

from ledger.resources.models import SchedulerConfig as SchedulerConfigModel
from scheduler.decisions import GroupUnschedulable
from scheduler.edge.translate import config_from, config_hash
from scheduler.model import SchedulerConfig
from tests.scheduler.sched_helpers import ZERO_BACKOFF, Sim, node, pg, pod

MINE = replace(ZERO_BACKOFF, scheduler_name="podledger")


def test_unset_fields_leave_the_manifest_and_the_hash_alone() -> None:
    bare = {"apiVersion": "podledger.io/v1alpha1", "kind": "SchedulerConfig", "metadata": {"name": "c"}}
    spec = SchedulerConfigModel.model_validate(bare).normalized()["spec"]
    assert "schedulerName" not in spec and "controllerEmulation" not in spec
    assert config_hash(config_from({"spec": spec})) == config_hash(SchedulerConfig())
    full = SchedulerConfigModel.model_validate(
        {**bare, "spec": {"schedulerName": "podledger", "controllerEmulation": False}}
    ).normalized()["spec"]
    assert (full["schedulerName"], full["controllerEmulation"]) == ("podledger", False)
    cfg = config_from({"spec": full})
    assert (cfg.profile, cfg.controller_emulation) == ("podledger", False)
    assert config_hash(cfg) != config_hash(SchedulerConfig())
    assert config_from({"spec": spec}).profile == "default-scheduler"
    bad = SchedulerConfigModel.model_validate({**bare, "spec": {"schedulerName": "Not_A_Name"}})
    assert [p[0] for p in bad.check()] == ["spec.schedulerName"]


def test_a_set_profile_schedules_only_its_own_pods() -> None:
    sim = Sim(MINE)
    sim.apply(node("n", cpu=8))
    sim.apply(
        pod("plain"),  # default-scheduler: another scheduler's pod
        pod("ours", scheduler_name="podledger"),
        pg("theirs", 1),
        pod("t0", group="theirs"),
        pg("g", 2),
        pod("g0", group="g", scheduler_name="podledger"),
        pod("g1", group="g", scheduler_name="podledger"),
    )
    assert sim.bound("ours", "g0", "g1")
    assert sim.node_of("plain") is None and sim.node_of("t0") is None
    # the other scheduler's gang is never attempted: no condition, no verdict
    assert sim.cond("theirs") is None
    assert not [d for d in sim.decisions() if isinstance(d, GroupUnschedulable) and "theirs" in d.group]


def test_unset_profile_is_default_scheduler_as_before() -> None:
    sim = Sim()
    sim.apply(node("n", cpu=8))
    sim.apply(pod("plain"), pod("ours", scheduler_name="podledger"))
    assert sim.bound("plain") and sim.node_of("ours") is None


def test_changing_the_profile_requeues_pending_pods() -> None:
    sim = Sim()
    sim.apply(node("n", cpu=8))
    sim.apply(pod("ours", scheduler_name="podledger"))
    assert sim.node_of("ours") is None
    sim.s.set_config(MINE)
    sim.run()
    assert sim.bound("ours")


def test_additional_scheduler_names_are_served_beside_the_profile() -> None:
    """``additionalSchedulerNames`` (``attach --mode shadow``): default-scheduler's pods and those
    naming podledger are both decided; a third scheduler's are not; unset, the hash is as before."""
    bare = {"apiVersion": "podledger.io/v1alpha1", "kind": "SchedulerConfig", "metadata": {"name": "c"}}
    spec = SchedulerConfigModel.model_validate(
        {**bare, "spec": {"additionalSchedulerNames": ["podledger"]}}
    ).normalized()["spec"]
    cfg = config_from({"spec": spec})
    assert cfg.also_serves == ("podledger",) and cfg.profile == "default-scheduler"
    assert config_hash(cfg) != config_hash(SchedulerConfig())
    bad = SchedulerConfigModel.model_validate({**bare, "spec": {"additionalSchedulerNames": ["Not_A_Name"]}})
    assert [p[0] for p in bad.check()] == ["spec.additionalSchedulerNames[0]"]
    sim = Sim(replace(ZERO_BACKOFF, also_serves=("podledger",)))
    sim.apply(node("n", cpu=8))
    sim.apply(pod("plain"), pod("ours", scheduler_name="podledger"), pod("other", scheduler_name="volcano"))
    assert sim.bound("plain", "ours")
    assert sim.node_of("other") is None
