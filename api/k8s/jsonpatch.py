"""RFC 6902 JSON Patch (``application/json-patch+json``), as kube-apiserver applies it: the
operations run in order on the object as the client sees it; a failed ``test`` or a missing
path refuses the whole patch (422), nothing is written."""

from __future__ import annotations

import copy
from typing import Any

from api.k8s.status import K8sError

MAX_OPS = 10_000


def _invalid(message: str) -> K8sError:
    return K8sError(422, f"the JSON patch could not be applied: {message}", reason="Invalid")


def _tokens(path: Any) -> list[str]:
    if not isinstance(path, str) or (path and not path.startswith("/")):
        raise _invalid(f"path {path!r} is not a JSON pointer")
    if path == "":
        return []
    return [t.replace("~1", "/").replace("~0", "~") for t in path[1:].split("/")]


def _index(container: list[Any], token: str, *, adding: bool) -> int:
    if adding and token == "-":
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise _invalid(f"{token!r} is not an array index")
    i = int(token)
    if i > len(container) or (i == len(container) and not adding):
        raise _invalid(f"index {i} is out of range")
    return i


def _parent(doc: Any, tokens: list[str]) -> Any:
    cur = doc
    for t in tokens[:-1]:
        if isinstance(cur, dict):
            if t not in cur:
                raise _invalid(f"missing path element {t!r}")
            cur = cur[t]
        elif isinstance(cur, list):
            cur = cur[_index(cur, t, adding=False)]
        else:
            raise _invalid(f"cannot descend into a scalar at {t!r}")
    return cur


def _get(doc: Any, tokens: list[str]) -> Any:
    if not tokens:
        return doc
    parent, last = _parent(doc, tokens), tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise _invalid(f"missing path element {last!r}")
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, adding=False)]
    raise _invalid("path goes through a scalar")


def _add(doc: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    parent, last = _parent(doc, tokens), tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, adding=True), value)
    else:
        raise _invalid("path goes through a scalar")
    return doc


def _remove(doc: Any, tokens: list[str]) -> Any:
    if not tokens:
        raise _invalid("cannot remove the whole document")
    parent, last = _parent(doc, tokens), tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise _invalid(f"missing path element {last!r}")
        del parent[last]
    elif isinstance(parent, list):
        del parent[_index(parent, last, adding=False)]
    else:
        raise _invalid("path goes through a scalar")
    return doc


def apply(doc: Any, ops: Any) -> Any:
    """``doc`` with the operations ``ops`` applied (a deep copy; ``doc`` is not changed)."""
    if not isinstance(ops, list):
        raise K8sError(400, "a JSON patch must be a JSON array of operations")
    if len(ops) > MAX_OPS:
        raise K8sError(413, f"a JSON patch of more than {MAX_OPS} operations is refused")
    out = copy.deepcopy(doc)
    for i, op in enumerate(ops):
        if not isinstance(op, dict) or not isinstance(op.get("op"), str):
            raise K8sError(400, f"operation {i} of the JSON patch is not an object with an op")
        kind, path = op["op"], _tokens(op.get("path"))
        if kind in ("add", "replace", "test") and "value" not in op:
            raise _invalid(f"operation {i} ({kind}) has no value")
        if kind == "add":
            out = _add(out, path, copy.deepcopy(op["value"]))
        elif kind == "remove":
            out = _remove(out, path)
        elif kind == "replace":
            _get(out, path)
            out = _add(_remove(out, path) if path else out, path, copy.deepcopy(op["value"]))
        elif kind in ("move", "copy"):
            source = _tokens(op.get("from"))
            value = copy.deepcopy(_get(out, source))
            if kind == "move":
                if path[: len(source)] == source and len(path) > len(source):
                    raise _invalid("cannot move a value into one of its children")
                out = _remove(out, source)
            out = _add(out, path, value)
        elif kind == "test":
            if _get(out, path) != op["value"]:
                raise _invalid(f"test operation {i} failed at {op.get('path')}")
        else:
            raise _invalid(f"unknown operation {kind!r}")
    return out
