"""Shared object types: the pydantic base classes, ``ObjectMeta`` and ``LabelSelector``.

``Resource`` is the base of every kind: identity (``apiVersion``, ``kind``, ``metadata``,
namespace defaulting), the normalized form stored in events, and ``check()`` (the value rules
a kind adds to its metadata rules).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from ledger.resources.kinds import KindInfo, get_kind
from ledger.resources.models.values import Problems, check_labels, check_name

ObjectKey = tuple[str, str, str]  # (kind, namespace or "" for cluster-scoped kinds, name)


# --------------------------------------------------------------------------- base classes


class K8sModel(BaseModel):
    """camelCase aliases, strict types, unknown fields ignored."""

    model_config = ConfigDict(
        extra="ignore",
        populate_by_name=True,
        alias_generator=to_camel,
        strict=True,
        validate_assignment=False,
    )

    def normalized(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_defaults=True, mode="json")


class Empty(K8sModel):
    """``{}`` — a union member that carries no data (``basic: {}``, ``single: {}``)."""


class OwnerReference(K8sModel):
    api_version: str
    kind: str
    name: str
    uid: str | None = None
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(K8sModel):
    name: str
    namespace: str | None = None
    uid: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    owner_references: list[OwnerReference] = Field(default_factory=list)

    @model_validator(mode="after")
    def _sort(self) -> Self:
        self.labels = dict(sorted(self.labels.items()))
        self.annotations = dict(sorted(self.annotations.items()))
        return self

    def check(self, namespaced: bool) -> Problems:
        problems: Problems = []
        check_name("metadata.name", self.name, problems)
        if namespaced and self.namespace is not None:
            check_name("metadata.namespace", self.namespace, problems, label=True)
        check_labels("metadata.labels", self.labels, problems)
        for i, ref in enumerate(self.owner_references):
            if not ref.name:
                problems.append((f"metadata.ownerReferences[{i}].name", "must not be empty"))
        if sum(1 for r in self.owner_references if r.controller) > 1:
            problems.append(
                ("metadata.ownerReferences", "only one reference can have controller set to true")
            )
        return problems


class Resource(K8sModel):
    """Base of every kind: ``apiVersion``, ``kind``, ``metadata``."""

    KIND: ClassVar[str] = ""

    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta

    @classmethod
    def info(cls) -> KindInfo:
        return get_kind(cls.KIND)

    @model_validator(mode="after")
    def _identity(self) -> Self:
        info = self.info()
        if not self.kind:
            self.kind = info.kind
        elif self.kind != info.kind:
            raise ValueError(f"kind {self.kind!r} does not match {info.kind}")
        if not self.api_version:
            self.api_version = info.api_version
        elif self.api_version not in info.api_versions:
            raise ValueError(
                f"{info.kind} is served as {' or '.join(info.api_versions)}, not {self.api_version!r}"
            )
        if info.namespaced:
            if not self.metadata.namespace:
                self.metadata.namespace = "default"
        else:
            self.metadata.namespace = None
        return self

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def namespace(self) -> str | None:
        return self.metadata.namespace

    @property
    def key(self) -> ObjectKey:
        return (self.KIND, self.metadata.namespace or "", self.metadata.name)

    @property
    def ref(self) -> str:
        """``PodGroup default/pg1`` / ``Node node-1``."""
        ns = self.metadata.namespace
        return f"{self.KIND} {ns}/{self.name}" if ns else f"{self.KIND} {self.name}"

    def check(self) -> Problems:
        """Value rules beyond types; ``[]`` when valid."""
        return self.metadata.check(self.info().namespaced)

    def normalized(self) -> dict[str, Any]:
        data = self.model_dump(by_alias=True, exclude_defaults=True, mode="json")
        data["apiVersion"] = self.api_version
        data["kind"] = self.kind
        meta = data["metadata"]
        if self.metadata.namespace is not None:
            meta["namespace"] = self.metadata.namespace
        # fixed key order: apiVersion, kind, metadata, then the rest as declared
        ordered = {
            "apiVersion": data.pop("apiVersion"),
            "kind": data.pop("kind"),
            "metadata": {"name": meta.pop("name"), **meta},
        }
        data.pop("metadata")
        ordered.update(data)
        return ordered

    @classmethod
    def from_normalized(cls, data: Mapping[str, Any]) -> Self:
        """Rebuild from a stored normalized dict (quantities already in base units)."""
        return cls.model_validate(data, context={"normalized": True})

    @classmethod
    def from_raw(cls, data: Mapping[str, Any]) -> Self:
        """Validate user input (quantities as Kubernetes strings). Raises pydantic.ValidationError."""
        return cls.model_validate(data)


# --------------------------------------------------------------------------- label selectors


def requirement_problems(path: str, key: str, operator: str, values: list[str]) -> Problems:
    """The rules label and node selector requirements share: a key, and values iff the operator takes them."""
    problems: Problems = []
    if not key:
        problems.append((f"{path}.key", "must not be empty"))
    if operator in ("In", "NotIn") and not values:
        problems.append((f"{path}.values", f"must be specified when `operator` is '{operator}'"))
    if operator in ("Exists", "DoesNotExist") and values:
        problems.append((f"{path}.values", f"may not be specified when `operator` is '{operator}'"))
    return problems


class LabelSelectorRequirement(K8sModel):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] = Field(default_factory=list)


class LabelSelector(K8sModel):
    match_labels: dict[str, str] = Field(default_factory=dict)
    match_expressions: list[LabelSelectorRequirement] = Field(default_factory=list)

    def check(self, path: str) -> Problems:
        problems: Problems = []
        check_labels(f"{path}.matchLabels", self.match_labels, problems)
        for i, req in enumerate(self.match_expressions):
            problems += requirement_problems(
                f"{path}.matchExpressions[{i}]", req.key, req.operator, req.values
            )
        return problems
