import pytest

from ledger.resources.kinds import (
    KINDS,
    UnknownKindError,
    WrongApiVersionError,
    check_api_version,
    resolve_kind,
)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Pod", "Pod"),
        ("pods", "Pod"),
        ("pod", "Pod"),
        ("po", "Pod"),
        ("PODS", "Pod"),
        ("nodes", "Node"),
        ("no", "Node"),
        ("pc", "PriorityClass"),
        ("priorityclasses", "PriorityClass"),
        ("pg", "PodGroup"),
        ("podgroups", "PodGroup"),
        ("podgroups.scheduling.k8s.io", "PodGroup"),
        ("cpg", "CompositePodGroup"),
        ("compositepodgroups", "CompositePodGroup"),
        ("wl", "Workload"),
        ("workloads", "Workload"),
        ("pdb", "PodDisruptionBudget"),
        ("poddisruptionbudgets", "PodDisruptionBudget"),
        ("eq", "ElasticQuota"),
        ("elasticquotas", "ElasticQuota"),
        ("eqt", "ElasticQuotaTree"),
        ("ElasticQuotaTrees", "ElasticQuotaTree"),
        ("schedulerconfigs", "SchedulerConfig"),
        ("schedulerconfig", "SchedulerConfig"),
        ("podgroup.scheduling.k8s.io", "PodGroup"),
    ],
)
def test_resolve_kind(text: str, kind: str) -> None:
    assert resolve_kind(text).kind == kind


def test_unknown_kind() -> None:
    with pytest.raises(UnknownKindError, match='"frobs"'):
        resolve_kind("frobs")


def test_registry_facts() -> None:
    by_kind = {k.kind: k for k in KINDS}
    assert by_kind["PodGroup"].group == "podgroup.scheduling.k8s.io"
    assert by_kind["PodGroup"].display("job-1") == "podgroup.scheduling.k8s.io/job-1"
    assert by_kind["Pod"].display("p") == "pod/p"
    assert by_kind["PodDisruptionBudget"].group == "poddisruptionbudget.policy"
    assert by_kind["SchedulerConfig"].group == "schedulerconfig.podledger.io"
    assert {k.kind for k in KINDS if not k.namespaced} == {"Node", "PriorityClass", "SchedulerConfig"}
    versions = {k.kind: k.api_version for k in KINDS}
    assert versions == {
        "Node": "v1",
        "Pod": "v1",
        "PriorityClass": "scheduling.k8s.io/v1",
        "Workload": "scheduling.k8s.io/v1beta1",
        "PodGroup": "scheduling.k8s.io/v1beta1",
        "CompositePodGroup": "scheduling.k8s.io/v1beta1",
        "PodDisruptionBudget": "policy/v1",
        "ElasticQuota": "scheduling.sigs.k8s.io/v1alpha1",
        "ElasticQuotaTree": "scheduling.sigs.k8s.io/v1beta1",
        "SchedulerConfig": "podledger.io/v1alpha1",
        "Job": "batch/v1",
        "JobSet": "jobset.x-k8s.io/v1alpha2",
    }


def test_check_api_version() -> None:
    assert check_api_version("PodGroup", "scheduling.k8s.io/v1beta1").kind == "PodGroup"
    for v in ("v1beta1", "v1alpha3"):  # upstream's master and 1.37
        assert check_api_version("CompositePodGroup", f"scheduling.k8s.io/{v}").kind == "CompositePodGroup"
    with pytest.raises(
        WrongApiVersionError, match=r'no matches for kind "PodGroup" in version "scheduling.k8s.io/v1alpha2"'
    ):
        check_api_version("PodGroup", "scheduling.k8s.io/v1alpha2")
    with pytest.raises(UnknownKindError, match=r'no matches for kind "Frob"'):
        check_api_version("Frob", "v1")
    with pytest.raises(UnknownKindError):
        check_api_version("pod", "v1")  # manifests use the exact kind
