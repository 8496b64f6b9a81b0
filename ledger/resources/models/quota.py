"""``scheduling.sigs.k8s.io`` elastic quotas: ElasticQuota (one per namespace) and ElasticQuotaTree.

The tree rules of docs/semantics.md Q.1: quota names unique, min <= max, the children's min sums to at
most the parent's min, a child's max at most the parent's, namespaces only on leaves and in at
most one leaf. One object per namespace / per cluster is an admission rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import ClassVar

from pydantic import Field

from ledger.resources.models.meta import K8sModel, Resource
from ledger.resources.models.values import Problems, ResourceList, add_into, check_name, key_path


def _check_min_max(path: str, mins: Mapping[str, int], maxs: Mapping[str, int] | None) -> Problems:
    problems: Problems = []
    if maxs is None:
        return problems
    for rname, value in mins.items():
        if rname in maxs and value > maxs[rname]:
            problems.append(
                (key_path(f"{path}.min", rname), f"min must be less than or equal to max ({rname})")
            )
    return problems


class ElasticQuotaSpec(K8sModel):
    min: ResourceList = Field(default_factory=dict)
    max: ResourceList | None = None  # None = unlimited


class ElasticQuota(Resource):
    KIND: ClassVar[str] = "ElasticQuota"
    spec: ElasticQuotaSpec = Field(default_factory=ElasticQuotaSpec)

    def check(self) -> Problems:
        return super().check() + _check_min_max("spec", self.spec.min, self.spec.max)


class QuotaTreeNode(K8sModel):
    name: str
    min: ResourceList = Field(default_factory=dict)
    max: ResourceList | None = None
    children: list[QuotaTreeNode] = Field(default_factory=list)
    namespaces: list[str] = Field(default_factory=list)

    def walk(
        self, path: str = "spec.root", parent: QuotaTreeNode | None = None
    ) -> Iterable[tuple[str, QuotaTreeNode, QuotaTreeNode | None]]:
        yield path, self, parent
        for i, child in enumerate(self.children):
            yield from child.walk(f"{path}.children[{i}]", self)


QuotaTreeNode.model_rebuild()


class ElasticQuotaTreeSpec(K8sModel):
    root: QuotaTreeNode


class ElasticQuotaTree(Resource):
    KIND: ClassVar[str] = "ElasticQuotaTree"
    spec: ElasticQuotaTreeSpec

    def check(self) -> Problems:
        problems = super().check()
        names: set[str] = set()
        namespaces: dict[str, str] = {}
        for path, node, _ in self.spec.root.walk():
            if not node.name:
                problems.append((f"{path}.name", "must not be empty"))
            elif node.name in names:
                problems.append((f"{path}.name", f"duplicate quota name {node.name!r}"))
            names.add(node.name)
            problems += _check_min_max(path, node.min, node.max)
            if node.namespaces and node.children:
                problems.append(
                    (f"{path}.namespaces", "only leaf quotas (without children) may list namespaces")
                )
            for j, ns in enumerate(node.namespaces):
                check_name(f"{path}.namespaces[{j}]", ns, problems, label=True)
                if ns in namespaces:
                    problems.append(
                        (
                            f"{path}.namespaces[{j}]",
                            f"namespace {ns!r} already belongs to quota "
                            f"{namespaces[ns]!r}; a namespace belongs to at most one leaf",
                        )
                    )
                namespaces.setdefault(ns, node.name)
            if node.children:
                sums: dict[str, int] = {}
                for child in node.children:
                    add_into(sums, child.min)
                for rname, total in sorted(sums.items()):
                    if total > node.min.get(rname, 0):
                        problems.append(
                            (
                                f"{path}.children",
                                f"the children's min {rname} sums to more than the min of {node.name!r}",
                            )
                        )
                if node.max is not None:
                    for i, child in enumerate(node.children):
                        for rname, limit in node.max.items():
                            if child.max is not None and child.max.get(rname, 0) > limit:
                                problems.append(
                                    (
                                        f"{path}.children[{i}].max",
                                        f"max {rname} of {child.name!r} "
                                        f"exceeds the max of its parent {node.name!r}",
                                    )
                                )
        return problems
