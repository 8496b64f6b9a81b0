"""Strategic merge patch (``application/strategic-merge-patch+json``), the patch kubectl's
client-side apply, ``kubectl patch`` and ``kubectl label`` send: like a JSON merge patch, but a
list of objects with a merge key (``containers`` by ``name``, ``ownerReferences`` by ``uid``...)
is merged item by item, and the directives ``$patch``, ``$setElementOrder/<list>``,
``$deleteFromPrimitiveList/<list>`` and ``$retainKeys`` are honoured. The merge keys are
upstream's ``patchMergeKey`` tags of the fields podledger's kinds carry."""

from __future__ import annotations

from typing import Any

MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
    "ownerReferences": "uid",
    "conditions": "type",
    "schedulingGates": "name",
    "topologySpreadConstraints": "topologyKey",
    "resourceClaims": "name",
    "hostAliases": "ip",
    "taints": "key",
}
ORDER = "$setElementOrder/"
DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"


def _merge_list(current: list[Any], patch: list[Any], key: str) -> list[Any]:
    out = list(current)
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            out.append(item)
            continue
        at = next((i for i, c in enumerate(out) if isinstance(c, dict) and c.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            if at is not None:
                del out[at]
        elif item.get("$patch") == "replace":
            replacement = {k: v for k, v in item.items() if k != "$patch"}
            if at is None:
                out.append(replacement)
            else:
                out[at] = replacement
        elif at is None:
            out.append(apply({}, item))
        else:
            out[at] = apply(out[at], item)
    return out


def _order(items: list[Any], order: list[Any], key: str | None) -> list[Any]:
    def ident(x: Any) -> Any:
        return x.get(key) if key and isinstance(x, dict) else x

    wanted = [ident(o) for o in order]
    ranked = sorted(
        range(len(items)),
        key=lambda i: (wanted.index(ident(items[i])) if ident(items[i]) in wanted else len(wanted), i),
    )
    return [items[i] for i in ranked]


def apply(current: Any, patch: Any) -> Any:
    """``current`` with the strategic merge patch ``patch`` applied (neither is changed)."""
    if not isinstance(patch, dict):
        return patch
    if patch.get("$patch") == "replace":
        return {k: v for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    out = dict(current) if isinstance(current, dict) else {}
    retain = patch.get("$retainKeys")
    for k, v in patch.items():
        if k.startswith("$"):
            continue
        if v is None:
            out.pop(k, None)
        elif isinstance(v, list) and k in MERGE_KEYS and isinstance(out.get(k), list):
            out[k] = _merge_list(out[k], v, MERGE_KEYS[k])
        elif isinstance(v, list) and k in MERGE_KEYS:
            out[k] = [
                {kk: vv for kk, vv in x.items() if kk != "$patch"} if isinstance(x, dict) else x
                for x in v
                if not (isinstance(x, dict) and x.get("$patch") == "delete")
            ]
        elif isinstance(v, dict):
            merged = apply(out.get(k), v)
            if merged is None:
                out.pop(k, None)
            else:
                out[k] = merged
        else:
            out[k] = v
    for k, v in patch.items():
        if k.startswith(DELETE_PRIMITIVE) and isinstance(v, list):
            name = k[len(DELETE_PRIMITIVE) :]
            if isinstance(out.get(name), list):
                out[name] = [x for x in out[name] if x not in v]
        elif k.startswith(ORDER) and isinstance(v, list):
            name = k[len(ORDER) :]
            if isinstance(out.get(name), list):
                out[name] = _order(out[name], v, MERGE_KEYS.get(name))
    if isinstance(retain, list):
        out = {k: v for k, v in out.items() if k in retain}
    return out
