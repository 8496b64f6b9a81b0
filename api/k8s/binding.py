"""POST pods/{name}/binding (and namespaces/{ns}/bindings): an outside scheduler's decision,
appended as PodBound; ``dryRun=All`` checks it and appends nothing."""

from __future__ import annotations

from typing import Any

from api.k8s import backend
from api.k8s.handlers import Target, _write, dry
from api.k8s.status import K8sError, conflict, not_found, success
from ledger.database import Database
from ledger.uow import UnitOfWork


def bind(
    db: Database, t: Target, body: Any, q: dict[str, str], actor: str, rid: str
) -> tuple[int, dict[str, Any]]:
    """POST pods/{name}/binding: an outside scheduler's decision, appended as PodBound."""
    res = t.res
    if not isinstance(body, dict):
        raise K8sError(400, "the request body must be a Binding object")
    meta = body.get("metadata") or {}
    target = body.get("target") or {}
    if not isinstance(meta, dict) or not isinstance(target, dict):
        raise K8sError(400, "metadata and target of a Binding must be objects")
    name = t.name or meta.get("name")
    if not name or not isinstance(name, str):
        raise K8sError(400, "a Binding needs metadata.name (the pod)")
    node = target.get("name")
    if not node or not isinstance(node, str) or target.get("kind", "Node") != "Node":
        raise K8sError(422, f'Binding "{name}" is invalid: target: a Node name is required', reason="Invalid")
    ns = t.namespace or "default"

    def run(uow: UnitOfWork) -> dict[str, Any]:
        pod = backend.row(uow.conn, "Pod", ns, name)
        if pod is None:
            raise not_found(res, name)
        bound = (pod["status"] or {}).get("nodeName") or (pod["object"].get("spec") or {}).get("nodeName")
        if bound:
            raise conflict(res, name, f'pod {name} is already assigned to node "{bound}"')
        if backend.row(uow.conn, "Node", "", node) is None:
            from api.k8s.resources import lookup

            nodes = lookup("", "v1", "nodes")
            assert nodes is not None
            raise not_found(nodes, node)
        backend.bind(
            uow, pod, node, actor=actor, meta={"via": "k8s", "operation": "Binding", "request_id": rid}
        )
        return success(res, name)

    return 201, _write(db, run, dry(q))
