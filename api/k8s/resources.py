"""The resources the Kubernetes-compatible API serves, at their upstream group/versions."""

from __future__ import annotations

from dataclasses import dataclass

from ledger.resources.kinds import KINDS

WRITE_VERBS = ("create", "delete", "get", "list", "patch", "update", "watch")
READ_VERBS = ("get", "list", "watch")


@dataclass(frozen=True)
class Resource:
    group: str  # "" for core
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    verbs: tuple[str, ...] = WRITE_VERBS
    stored: bool = True  # a podledger kind (False: derived, read-only: Namespace, Event)
    status: bool = False  # has a status subresource

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def api_version(self) -> str:
        return self.group_version

    def base_path(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def gr(self) -> str:
        """``pods`` / ``podgroups.scheduling.k8s.io`` as Status messages name a resource."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


def _from_kinds() -> list[Resource]:
    out = []
    for k in KINDS:
        for api_version in k.api_versions:  # every served version (Workload/PodGroup: v1beta1 and v1)
            group, _, version = api_version.rpartition("/")
            out.append(
                Resource(
                    group=group,
                    version=version,
                    kind=k.kind,
                    plural=k.plural,
                    singular=k.singular,
                    namespaced=k.namespaced,
                    short_names=k.short_names,
                    status=k.kind in ("Pod", "Node", "PodGroup", "CompositePodGroup", "PodDisruptionBudget"),
                )
            )
    return out


RESOURCES: tuple[Resource, ...] = (
    *_from_kinds(),
    Resource("", "v1", "Namespace", "namespaces", "namespace", False, ("ns",), READ_VERBS, stored=False),
    Resource("", "v1", "Event", "events", "event", True, ("ev",), ("get", "list", "watch"), stored=False),
    Resource(
        "events.k8s.io",
        "v1",
        "Event",
        "events",
        "event",
        True,
        ("ev",),
        ("get", "list", "watch"),
        stored=False,
    ),
    # reviews: answered from the token's role, never stored (api/k8s/reviews.py)
    Resource(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        "",
        False,
        verbs=("create",),
        stored=False,
    ),
    Resource(
        "authentication.k8s.io",
        "v1",
        "SelfSubjectReview",
        "selfsubjectreviews",
        "",
        False,
        verbs=("create",),
        stored=False,
    ),
)
REVIEW_GROUPS = ("authorization.k8s.io", "authentication.k8s.io")

_BY_PATH: dict[tuple[str, str, str], Resource] = {(r.group, r.version, r.plural): r for r in RESOURCES}


def lookup(group: str, version: str, plural: str) -> Resource | None:
    return _BY_PATH.get((group, version, plural))


def groups() -> dict[str, list[str]]:
    """Named groups → their versions, preferred (the most stable) first."""
    out: dict[str, list[str]] = {}
    for r in RESOURCES:
        if r.group and r.version not in out.setdefault(r.group, []):
            out[r.group].append(r.version)
    for versions in out.values():
        versions.sort(key=_stability)
    return dict(sorted(out.items()))


def _stability(version: str) -> tuple[int, int, int]:
    # v1 > v1beta1 > v1alpha3: GA first, then beta, then alpha; higher numbers first
    import re

    m = re.match(r"^v(\d+)(?:(alpha|beta)(\d+))?$", version)
    if not m:
        return (9, 0, 0)
    level = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    return (level, -int(m.group(1)), -int(m.group(3) or 0))


def in_group_version(group: str, version: str) -> list[Resource]:
    return [r for r in RESOURCES if r.group == group and r.version == version]
