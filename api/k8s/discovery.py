"""Discovery: ``/version``, ``/api``, ``/apis``, per-group resource lists, and the aggregated
form (``apidiscovery.k8s.io/v2``) kubectl asks for with its Accept header."""

from __future__ import annotations

from typing import Any

from api.k8s import resources as R
from api.k8s.resources import Resource

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def wants_aggregated(accept: str | None) -> bool:
    return bool(accept) and "as=APIGroupDiscoveryList" in (accept or "") and "v=v2;" in (accept or "") + ";"


SERVED_MINOR = 37  # the Kubernetes release whose scheduling APIs are served (docs/semantics.md)


def version() -> dict[str, Any]:
    """The Kubernetes API level served (1.37: Workload/PodGroup v1, CompositePodGroup v1alpha3);
    kubectl 1.32 warns about the skew, as it would against a 1.37 kube-apiserver."""
    return {
        "major": "1",
        "minor": str(SERVED_MINOR),
        "gitVersion": f"v1.{SERVED_MINOR}.0-podledger",
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "python",
        "compiler": "podledger",
        "platform": "linux/amd64",
    }


def _subresources(r: Resource) -> list[str]:
    subs = []
    if r.status:
        subs.append("status")
    if r.kind == "Pod" and not r.group:
        subs += ["binding", "eviction"]
    return subs


def resource_list(group: str, version: str) -> dict[str, Any] | None:
    res = R.in_group_version(group, version)
    if not res:
        return None
    items: list[dict[str, Any]] = []
    for r in res:
        items.append(
            {
                "name": r.plural,
                "singularName": r.singular,
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": list(r.verbs),
                **({"shortNames": list(r.short_names)} if r.short_names else {}),
            }
        )
        for sub in _subresources(r):
            if sub in ("binding", "eviction"):
                items.append(
                    {
                        "name": f"pods/{sub}",
                        "singularName": "",
                        "namespaced": True,
                        "kind": "Binding" if sub == "binding" else "Eviction",
                        "verbs": ["create"],
                        **({"group": "policy", "version": "v1"} if sub == "eviction" else {}),
                    }
                )
            else:
                items.append(
                    {
                        "name": f"{r.plural}/status",
                        "singularName": "",
                        "namespaced": r.namespaced,
                        "kind": r.kind,
                        "verbs": ["get", "patch", "update"],
                    }
                )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": items,
    }


def core_versions() -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}],
    }


def _group(name: str, versions: list[str]) -> dict[str, Any]:
    gvs = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": gvs, "preferredVersion": gvs[0]}


def group_list() -> dict[str, Any]:
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group(g, vs) for g, vs in R.groups().items()],
    }


def group(name: str) -> dict[str, Any] | None:
    versions = R.groups().get(name)
    if not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, versions)}


def _aggregated_resource(r: Resource) -> dict[str, Any]:
    out: dict[str, Any] = {
        "resource": r.plural,
        "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
        "scope": "Namespaced" if r.namespaced else "Cluster",
        "singularResource": r.singular,
        "verbs": list(r.verbs),
    }
    if r.short_names:
        out["shortNames"] = list(r.short_names)
    subs = []
    for sub in _subresources(r):
        if sub in ("binding", "eviction"):
            kind = {"group": "", "version": "v1", "kind": "Binding"}
            if sub == "eviction":
                kind = {"group": "policy", "version": "v1", "kind": "Eviction"}
            subs.append({"subresource": sub, "responseKind": kind, "verbs": ["create"]})
        else:
            subs.append(
                {
                    "subresource": "status",
                    "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
                    "verbs": ["get", "patch", "update"],
                }
            )
    if subs:
        out["subresources"] = subs
    return out


def _aggregated_group(name: str, versions: list[str]) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "versions": [
            {
                "version": v,
                "resources": [_aggregated_resource(r) for r in R.in_group_version(name, v)],
                "freshness": "Current",
            }
            for v in versions
        ],
    }


def aggregated(core: bool) -> dict[str, Any]:
    items = (
        [_aggregated_group("", ["v1"])]
        if core
        else [_aggregated_group(g, vs) for g, vs in R.groups().items()]
    )
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    }
