"""Elastic quota: flat ``ElasticQuota`` objects and ``ElasticQuotaTree`` nodes, the quota
PreFilter, and the usage views that quota-aware preemption simulates on (docs/semantics.md Q.1-Q.3).

Objects
  * a flat ElasticQuota (one per namespace) becomes one ``QuotaNode`` named after the object
    (``metadata.name``) covering its namespace;
  * an ElasticQuotaTree becomes one ``QuotaNode`` per tree node (``parent`` = the tree parent);
    leaves list the namespaces they cover.
  A namespace covered by a tree leaf and by a flat quota belongs to the tree leaf (ACK's tree is
  the cluster-wide definition); with several trees the one whose object key sorts first wins.
  Node names must be unique; a later duplicate (in object-key order) is renamed
  ``<name>@<object key>`` so that messages stay unambiguous.

Usage
  ``used`` of a quota = the sum of the requests of the pods that currently occupy the snapshot
  (bound or assumed) in the namespaces of the quota's subtree. Only resources that a quota names
  in ``min`` or ``max`` are *managed* by it; other resources are unlimited and ignored.

PreFilter (one attempt: a plain pod or all pending pods of a group, summed)
  1. ``used + request <= max`` for every managed resource, at the leaf and at every ancestor;
  2. the sum of all leaf quotas' ``used`` plus the request must not exceed the sum of all leaf
     ``min``s (scheduler-plugins: borrowing is only allowed out of guaranteed capacity that is
     idle), for resources named in at least one leaf ``min``.
  The first failure (leaf before ancestors, resources in name order) is reported, naming the
  quota and the resource: ``quota root.a: cpu used 18 + requested 4 exceeds max 20``.
  Pods in namespaces without a quota are not checked.

Quantities in messages use Kubernetes notation: cpu in cores (``500m`` below one core or when
fractional), memory-like resources with binary suffixes when exact, counts otherwise.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from scheduler.framework import SUCCESS, Code, Status
from scheduler.model import CPU, PODS, Pod, QuotaNode

NAME = "ElasticQuota"
MSG_MAX = "quota %s: %s used %s + requested %s exceeds max %s"
MSG_MIN_SUM = "quota %s: %s used %s + requested %s exceeds the sum of min %s of all quotas"

_BINARY = (
    ("Ei", 1 << 60),
    ("Pi", 1 << 50),
    ("Ti", 1 << 40),
    ("Gi", 1 << 30),
    ("Mi", 1 << 20),
    ("Ki", 1 << 10),
)
_BYTES = {"memory", "ephemeral-storage", "storage"}


def fmt_quantity(resource: str, value: int) -> str:
    """Kubernetes notation of an exact integer quantity (see module docstring)."""
    if resource == CPU:
        return str(value // 1000) if value % 1000 == 0 else f"{value}m"
    if resource in _BYTES or resource.startswith("hugepages-"):
        for suffix, unit in _BINARY:
            if value and value % unit == 0:
                return f"{value // unit}{suffix}"
    return str(value)


def requests_of(pods: Iterable[Pod]) -> dict[str, int]:
    """Summed requests of ``pods`` (``pods`` itself excluded: quotas do not manage it)."""
    out: dict[str, int] = {}
    for p in pods:
        for r, v in p.requests.items():
            if r != PODS and v:
                out[r] = out.get(r, 0) + int(v)
    return out


@dataclass(slots=True)
class Quotas:
    """All quota objects the scheduler knows, indexed by namespace (see module docstring)."""

    objects: dict[str, tuple[QuotaNode, ...]] = field(default_factory=dict)  # object key -> nodes
    nodes: dict[str, QuotaNode] = field(default_factory=dict)  # name -> node (resolved)
    leaf_of_ns: dict[str, str] = field(default_factory=dict)
    leaves: tuple[str, ...] = ()
    min_managed: frozenset[str] = frozenset()
    version: int = 0

    # ------------------------------------------------------------------ objects
    def upsert(self, key: str, nodes: Sequence[QuotaNode]) -> None:
        """``key``: ``ElasticQuota:<ns>/<name>`` or ``ElasticQuotaTree:<ns>/<name>``."""
        self.objects[key] = tuple(nodes)
        self._rebuild()

    def remove(self, key: str) -> bool:
        if self.objects.pop(key, None) is None:
            return False
        self._rebuild()
        return True

    @property
    def active(self) -> bool:
        return bool(self.leaf_of_ns)

    def _rebuild(self) -> None:
        self.version += 1
        nodes: dict[str, QuotaNode] = {}
        leaf_of: dict[str, str] = {}
        # trees first (they take precedence), then flat quotas; each group in key order
        keys = sorted(self.objects, key=lambda k: (not k.startswith("ElasticQuotaTree:"), k))
        for key in keys:
            renamed: dict[str, str] = {}
            for n in self.objects[key]:
                name = n.name if n.name not in nodes else f"{n.name}@{key}"
                renamed[n.name] = name
            for n in self.objects[key]:
                name = renamed[n.name]
                parent = renamed.get(n.parent) if n.parent is not None else None
                node = QuotaNode(
                    name, dict(n.min), dict(n.max) if n.max is not None else None, n.namespaces, parent
                )
                nodes[name] = node
                for ns in n.namespaces:
                    leaf_of.setdefault(ns, name)
        self.nodes = nodes
        self.leaf_of_ns = leaf_of
        self.leaves = tuple(sorted({q for q in leaf_of.values()}))
        managed: set[str] = set()
        for q in self.leaves:
            managed.update(r for r, v in nodes[q].min.items() if v)
        self.min_managed = frozenset(managed)

    # ------------------------------------------------------------------ lookups
    def leaf_for(self, namespace: str) -> str | None:
        return self.leaf_of_ns.get(namespace)

    def chain(self, name: str) -> list[str]:
        """``name`` and its ancestors, leaf first (cycle-safe)."""
        out: list[str] = []
        cur: str | None = name
        while cur is not None and cur in self.nodes and cur not in out:
            out.append(cur)
            cur = self.nodes[cur].parent
        return out

    def managed(self, name: str) -> set[str]:
        n = self.nodes[name]
        out = {r for r in n.min}
        if n.max is not None:
            out.update(n.max)
        return out

    # ------------------------------------------------------------------- usage
    def usage(
        self, pods: Mapping[str, Pod], occupying: Iterable[str], exclude: Collection[str] = ()
    ) -> Usage:
        """Usage view from the keys of the pods that occupy the snapshot."""
        u = Usage(self)
        if not self.leaf_of_ns:
            return u
        for k in occupying:
            if k in exclude:
                continue
            p = pods.get(k)
            if p is not None and p.namespace in self.leaf_of_ns:
                u.add(p, 1)
        return u

    def usage_of(self, ns_used: Mapping[str, Mapping[str, int]], ns_count: Mapping[str, int]) -> Usage:
        """The same view as ``usage``, in O(namespaces), from per-namespace totals over the pods
        occupying the snapshot (``Snapshot.ns_used``: requests summed; ``Snapshot.ns_count``: how
        many pods, so that a quota with only zero-request pods has its empty entry as in ``usage``)."""
        u = Usage(self)
        if not self.leaf_of_ns:
            return u
        used = u.used
        for ns in ns_count:
            leaf = self.leaf_of_ns.get(ns)
            if leaf is None:
                continue
            totals = ns_used.get(ns, {})
            for q in self.chain(leaf):
                d = used.setdefault(q, {})
                for r, v in totals.items():
                    d[r] = d.get(r, 0) + v
        return u


@dataclass(slots=True)
class Usage:
    """Per-quota ``used`` (including descendants' pods); adjustable while simulating."""

    quotas: Quotas
    used: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, pod: Pod, sign: int) -> None:
        leaf = self.quotas.leaf_of_ns.get(pod.namespace)
        if leaf is None:
            return
        for q in self.quotas.chain(leaf):
            u = self.used.setdefault(q, {})
            for r, v in pod.requests.items():
                if r != PODS and v:
                    u[r] = u.get(r, 0) + sign * int(v)

    def of(self, name: str) -> dict[str, int]:
        return self.used.get(name, {})

    def over_min(self, name: str) -> bool:
        """The quota uses more than its ``min`` of some resource it manages (it is borrowing)."""
        n = self.quotas.nodes[name]
        u = self.of(name)
        return any(u.get(r, 0) > n.min.get(r, 0) for r in self.quotas.managed(name))

    def within_min(self, name: str, request: Mapping[str, int]) -> bool:
        """``used + request <= min`` for every managed resource the request asks for."""
        n = self.quotas.nodes[name]
        u = self.of(name)
        managed = self.quotas.managed(name)
        return all(u.get(r, 0) + v <= n.min.get(r, 0) for r, v in request.items() if r in managed)

    def check(self, namespace: str, request: Mapping[str, int]) -> str | None:
        """The PreFilter rule for ``request`` in ``namespace``: None, or the failure reason."""
        qs = self.quotas
        leaf = qs.leaf_of_ns.get(namespace)
        if leaf is None:
            return None
        for q in qs.chain(leaf):
            mx = qs.nodes[q].max
            if mx is None:
                continue
            u = self.of(q)
            for r in sorted(request):
                if r in mx and u.get(r, 0) + request[r] > mx[r]:
                    return MSG_MAX % (
                        q,
                        r,
                        fmt_quantity(r, u.get(r, 0)),
                        fmt_quantity(r, request[r]),
                        fmt_quantity(r, mx[r]),
                    )
        for r in sorted(request):
            if r not in qs.min_managed or not request[r]:
                continue
            total = sum(self.of(q).get(r, 0) for q in qs.leaves)
            mins = sum(qs.nodes[q].min.get(r, 0) for q in qs.leaves)
            if total + request[r] > mins:
                return MSG_MIN_SUM % (
                    leaf,
                    r,
                    fmt_quantity(r, total),
                    fmt_quantity(r, request[r]),
                    fmt_quantity(r, mins),
                )
        return None

    def state_of(self, name: str, request: Mapping[str, int] | None = None) -> dict[str, object]:
        """Plain-data record of one quota (name, used, min, max[, request]) for decisions."""
        n = self.quotas.nodes[name]
        managed = self.quotas.managed(name)
        used = {r: v for r, v in sorted(self.of(name).items()) if r in managed}
        out: dict[str, object] = {
            "name": name,
            "used": used,
            "min": dict(sorted(n.min.items())),
            "max": dict(sorted(n.max.items())) if n.max is not None else None,
        }
        if request is not None:
            out["request"] = {r: v for r, v in sorted(request.items()) if r in managed}
        return out


def pre_filter_status(reason: str | None) -> Status:
    if reason is None:
        return SUCCESS
    return Status(Code.UNSCHEDULABLE, (reason,), NAME)


def nodes_from_tree(root: Mapping[str, object]) -> list[QuotaNode]:
    """QuotaNodes of a normalized ``ElasticQuotaTree.spec.root`` (pre-order)."""
    out: list[QuotaNode] = []

    def res(v: object) -> dict[str, int]:
        return {str(k): int(x) for k, x in v.items()} if isinstance(v, Mapping) else {}

    def visit(n: Mapping[str, object], parent: str | None) -> None:
        name = str(n.get("name") or "")
        mx = n.get("max")
        nss = n.get("namespaces")
        out.append(
            QuotaNode(
                name,
                res(n.get("min")),
                res(mx) if isinstance(mx, Mapping) else None,
                tuple(str(x) for x in nss) if isinstance(nss, list) else (),
                parent,
            )
        )
        children = n.get("children")
        if isinstance(children, list):
            for c in children:
                if isinstance(c, Mapping):
                    visit(c, name)

    visit(root, None)
    return out


def node_from_flat(namespace: str, name: str, spec: Mapping[str, object]) -> QuotaNode:
    """The QuotaNode of a normalized flat ``ElasticQuota``."""
    mn, mx = spec.get("min"), spec.get("max")
    return QuotaNode(
        name,
        {str(k): int(v) for k, v in mn.items()} if isinstance(mn, Mapping) else {},
        {str(k): int(v) for k, v in mx.items()} if isinstance(mx, Mapping) else None,
        (namespace,),
        None,
    )
