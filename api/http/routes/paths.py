"""Where podledger's own JSON routes live, and their path parameters. The Kubernetes-compatible
API owns ``/api``, ``/apis`` and ``/api/v1/namespaces/...``, so podledger's routes are under
their own prefix (DESIGN.md §4)."""

from typing import Annotated

from fastapi import Path

PREFIX = "/podledger/v1"
CLUSTER = "-"  # the namespace segment of cluster-scoped objects (nodes, priorityclasses, …)


KindPath = Annotated[
    str,
    Path(
        description="Plural lower-case kind: pods, nodes, podgroups, … (aliases accepted)",
        examples=["podgroups"],
    ),
]
NsPath = Annotated[str, Path(description="Namespace; `-` for cluster-scoped kinds", examples=["team-a"])]
NamePath = Annotated[str, Path(description="Object name", examples=["llm-pretrain"])]


def job_url(job_id: str) -> str:
    return f"{PREFIX}/jobs/{job_id}"


__all__ = ["CLUSTER", "PREFIX", "KindPath", "NamePath", "NsPath", "job_url"]
