"""Where podledger's own JSON routes live, and their path parameters. The Kubernetes-compatible
API owns ``/api``, ``/apis`` and ``/api/v1/namespaces/...``, so podledger's routes are under
their own prefix (DESIGN.md §4)."""

from typing import Annotated

from fastapi import Path

from api.http.errors import ApiError
from ledger.resources.kinds import KindInfo

PREFIX = "/podledger/v1"
CLUSTER = "-"  # the namespace segment of cluster-scoped objects (nodes, priorityclasses, …)


KindPath = Annotated[
    str,
    Path(
        description="Plural lower-case kind: pods, nodes, podgroups, … (aliases accepted)",
        examples=["podgroups"],
    ),
]
# No NUL or other control characters (PostgreSQL text cannot hold NUL; no name contains any):
# refused with 422 naming the parameter, before any query runs.
NO_CONTROL = r"^[^\x00-\x1f\x7f]*$"
NsPath = Annotated[
    str,
    Path(description="Namespace; `-` for cluster-scoped kinds", examples=["team-a"], pattern=NO_CONTROL),
]
NamePath = Annotated[str, Path(description="Object name", examples=["llm-pretrain"], pattern=NO_CONTROL)]


def object_ns(info: KindInfo, namespace: str) -> str:
    """The ``objects.namespace`` value for a path segment ('' for cluster-scoped kinds)."""
    if not info.namespaced:
        if namespace not in (CLUSTER, ""):
            raise ApiError(
                404, "not_found", f"{info.plural} are cluster-scoped: use {CLUSTER} as the namespace segment"
            )
        return ""
    return namespace


def job_url(job_id: str) -> str:
    return f"{PREFIX}/jobs/{job_id}"


__all__ = ["CLUSTER", "NO_CONTROL", "PREFIX", "KindPath", "NamePath", "NsPath", "job_url", "object_ns"]
