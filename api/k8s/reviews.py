"""``kubectl auth can-i`` (SelfSubjectAccessReview) and ``kubectl auth whoami``
(SelfSubjectReview), answered from the bearer token's role: a reader may get, list and watch;
a writer may also create, update, patch and delete (and bind and evict pods); an admin
everything. Nothing is written."""

from __future__ import annotations

from typing import Any

from api.k8s import resources as R
from api.k8s.status import K8sError

READ = ("get", "list", "watch")
WRITE = ("create", "update", "patch", "delete", "deletecollection")


def _needed(verb: str) -> str | None:
    if verb in READ:
        return "reader"
    if verb in WRITE:
        return "writer"
    if verb == "*":
        return "admin"
    return None


def access_review(principal: Any, body: Any) -> dict[str, Any]:
    """The SelfSubjectAccessReview with its status filled in."""
    if not isinstance(body, dict) or not isinstance(body.get("spec"), dict):
        raise K8sError(400, "the request body must be a SelfSubjectAccessReview with a spec")
    spec = body["spec"]
    attrs = spec.get("resourceAttributes")
    non_resource = spec.get("nonResourceAttributes")
    allowed, reason = False, ""
    if isinstance(attrs, dict):
        verb = str(attrs.get("verb") or "")
        group, plural = str(attrs.get("group") or ""), str(attrs.get("resource") or "")
        sub = str(attrs.get("subresource") or "")
        served = plural == "*" or any(r.plural == plural and r.group == group for r in R.RESOURCES)
        needed = _needed(verb)
        if sub in ("binding", "eviction") and verb == "create":
            needed = "writer"
        if not served:
            reason = f'resource "{plural}" in API group "{group}" is not served by podledger'
        elif needed is None:
            reason = f'verb "{verb}" is not served by podledger'
        else:
            allowed = principal.allows(needed)
            reason = (
                f'the token\'s role "{principal.role}" '
                + ("allows" if allowed else "does not allow")
                + f" {verb}"
            )
    elif isinstance(non_resource, dict):
        verb = str(non_resource.get("verb") or "")
        allowed = verb == "get" and principal.allows("reader")
        reason = f'the token\'s role "{principal.role}"'
    else:
        raise K8sError(
            422,
            'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: '
            'Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes must be specified',
            reason="Invalid",
        )
    out = {k: v for k, v in body.items() if k != "status"}
    out.update(apiVersion="authorization.k8s.io/v1", kind="SelfSubjectAccessReview")
    out.setdefault("metadata", {})
    out["status"] = {"allowed": allowed, **({"reason": reason} if reason else {})}
    return out


def whoami(principal: Any) -> dict[str, Any]:
    """The SelfSubjectReview: the token's actor as the user name, its role as a group."""
    return {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "SelfSubjectReview",
        "metadata": {"creationTimestamp": None},
        "status": {
            "userInfo": {
                "username": principal.actor,
                "groups": [f"podledger:{principal.role}", "system:authenticated"],
            }
        },
    }


# ----------------------------------------------------------------------------------- protobuf

PROTOBUF = "application/vnd.kubernetes.protobuf"


def _fields(data: bytes) -> dict[int, bytes]:
    """The length-delimited fields of one protobuf message (varints skipped); what the few
    string fields of a review need, nothing more."""
    out: dict[int, bytes] = {}
    i = 0

    def varint() -> int:
        nonlocal i
        shift = value = 0
        while True:
            if i >= len(data) or shift > 63:
                raise K8sError(400, "the protobuf body is truncated")
            b = data[i]
            i += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return value

    while i < len(data):
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            varint()
        elif wire == 2:
            n = varint()
            if i + n > len(data):
                raise K8sError(400, "the protobuf body is truncated")
            out[number] = data[i : i + n]
            i += n
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            raise K8sError(400, f"the protobuf body has an unsupported wire type {wire}")
    return out


def from_protobuf(body: bytes) -> dict[str, Any]:
    """A SelfSubjectAccessReview sent as Kubernetes protobuf (``k8s\\0`` + runtime.Unknown)."""
    if not body.startswith(b"k8s\x00"):
        raise K8sError(400, "the protobuf body lacks the k8s envelope")
    raw = _fields(body[4:]).get(2, b"")
    spec = _fields(_fields(raw).get(2, b""))

    def strings(msg: bytes, names: tuple[str, ...]) -> dict[str, str]:
        f = _fields(msg)
        return {name: f[i + 1].decode("utf-8", "replace") for i, name in enumerate(names) if i + 1 in f}

    out: dict[str, Any] = {}
    if 1 in spec:
        out["resourceAttributes"] = strings(
            spec[1], ("namespace", "verb", "group", "version", "resource", "subresource", "name")
        )
    if 2 in spec:
        out["nonResourceAttributes"] = strings(spec[2], ("path", "verb"))
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": out}
