"""Registry of the resource kinds podledger accepts.

Each kind has its accepted ``apiVersion``, plural / singular / short names (for
``podledger get``), the kubectl-style display name used in command output
(``podgroup.scheduling.k8s.io/job-1 created``) and whether it is namespaced.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "KINDS",
    "KindInfo",
    "UnknownKindError",
    "WrongApiVersionError",
    "check_api_version",
    "get_kind",
    "resolve_kind",
]


class UnknownKindError(ValueError):
    """The user named a kind podledger does not know."""


class WrongApiVersionError(ValueError):
    """The kind is known but not served at the given apiVersion."""


@dataclass(frozen=True, slots=True)
class KindInfo:
    kind: str  # "PodGroup"
    api_versions: tuple[str, ...]  # first = preferred
    plural: str  # "podgroups"
    short_names: tuple[str, ...]  # ("pg",)
    group: str  # display name for kubectl-style output: "podgroup.scheduling.k8s.io"
    namespaced: bool

    @property
    def api_version(self) -> str:
        """The preferred apiVersion (the first of ``api_versions``)."""
        return self.api_versions[0]

    @property
    def singular(self) -> str:
        return self.kind.lower()

    def display(self, name: str) -> str:
        """``podgroup.scheduling.k8s.io/job-1`` (the object name only, as kubectl prints it)."""
        return f"{self.group}/{name}"


# Workload and PodGroup: v1beta1 (1.37, the preferred version here: what podledger writes and
# shows when a manifest names none) and v1 (GA); both are the same objects, stored with the
# apiVersion they were applied with (KEP-4671).
SCHEDULING_WORKLOAD_VERSIONS = ("scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1")
# CompositePodGroup: v1beta1 (upstream's master, KEP-6012 beta; preferred) and v1alpha3 (1.37),
# the same objects, stored with the apiVersion they were applied with.
SCHEDULING_COMPOSITE_VERSIONS = ("scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha3")

KINDS: tuple[KindInfo, ...] = (
    KindInfo("Node", ("v1",), "nodes", ("no",), "node", False),
    KindInfo("Pod", ("v1",), "pods", ("po",), "pod", True),
    KindInfo(
        "PriorityClass",
        ("scheduling.k8s.io/v1",),
        "priorityclasses",
        ("pc",),
        "priorityclass.scheduling.k8s.io",
        False,
    ),
    KindInfo(
        "Workload", SCHEDULING_WORKLOAD_VERSIONS, "workloads", ("wl",), "workload.scheduling.k8s.io", True
    ),
    KindInfo(
        "PodGroup", SCHEDULING_WORKLOAD_VERSIONS, "podgroups", ("pg",), "podgroup.scheduling.k8s.io", True
    ),
    KindInfo(
        "CompositePodGroup",
        SCHEDULING_COMPOSITE_VERSIONS,
        "compositepodgroups",
        ("cpg",),
        "compositepodgroup.scheduling.k8s.io",
        True,
    ),
    KindInfo(
        "PodDisruptionBudget",
        ("policy/v1",),
        "poddisruptionbudgets",
        ("pdb",),
        "poddisruptionbudget.policy",
        True,
    ),
    KindInfo(
        "ElasticQuota",
        ("scheduling.sigs.k8s.io/v1alpha1",),
        "elasticquotas",
        ("eq",),
        "elasticquota.scheduling.sigs.k8s.io",
        True,
    ),
    KindInfo(
        "ElasticQuotaTree",
        ("scheduling.sigs.k8s.io/v1beta1",),
        "elasticquotatrees",
        ("eqt",),
        "elasticquotatree.scheduling.sigs.k8s.io",
        True,
    ),
    KindInfo("Job", ("batch/v1",), "jobs", (), "job.batch", True),
    KindInfo("JobSet", ("jobset.x-k8s.io/v1alpha2",), "jobsets", ("js",), "jobset.jobset.x-k8s.io", True),
    KindInfo(
        "SchedulerConfig",
        ("podledger.io/v1alpha1",),
        "schedulerconfigs",
        (),
        "schedulerconfig.podledger.io",
        False,
    ),
)

_BY_KIND: dict[str, KindInfo] = {k.kind: k for k in KINDS}
_LOOKUP: dict[str, KindInfo] = {}
for _info in KINDS:
    for _alias in (
        _info.kind,
        _info.plural,
        _info.singular,
        *_info.short_names,
        _info.group,
        f"{_info.plural}.{_info.group.partition('.')[2]}".rstrip("."),
    ):
        _LOOKUP[_alias.lower()] = _info


def get_kind(kind: str) -> KindInfo:
    """Exact lookup by the canonical kind name (``"PodGroup"``)."""
    try:
        return _BY_KIND[kind]
    except KeyError:
        raise UnknownKindError(_unknown_message(kind)) from None


def resolve_kind(user_string: str) -> KindInfo:
    """Resolve what a user typed: kind, plural, singular, short name or ``plural.group``.

    Case-insensitive: ``PodGroup``, ``podgroups``, ``pg``, ``podgroups.scheduling.k8s.io``.
    """
    info = _LOOKUP.get(user_string.strip().lower())
    if info is None:
        raise UnknownKindError(_unknown_message(user_string))
    return info


def check_api_version(kind: str, api_version: str) -> KindInfo:
    """Return the kind's info if ``apiVersion`` serves it, else raise a kubectl-like error."""
    info = _BY_KIND.get(kind)
    if info is None:
        known = ", ".join(k.kind for k in KINDS)
        raise UnknownKindError(
            f'no matches for kind "{kind}" in version "{api_version}" (known kinds: {known})'
        )
    if api_version not in info.api_versions:
        raise WrongApiVersionError(
            f'no matches for kind "{kind}" in version "{api_version}" '
            f"(podledger serves {kind} as {' or '.join(info.api_versions)})"
        )
    return info


def _unknown_message(kind: str) -> str:
    known = ", ".join(k.kind for k in KINDS)
    return f'the server doesn\'t have a resource type "{kind}" (known kinds: {known})'
