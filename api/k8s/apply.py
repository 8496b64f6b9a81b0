"""Server-side apply with field ownership by manager, as upstream's semantics go (a subset).

Each apply records the configuration its manager sent (``meta.applied`` of the event, with
``meta.fieldManager``); a manager's fields are the leaves of its last applied configuration on
the object's stream (since the object was last created). An apply then:

* sets every field its configuration holds (merged as a strategic merge patch, so a partial
  apply, e.g. labels only, changes only those fields);
* removes the fields its previous configuration held and this one does not, unless another
  manager's configuration holds them too;
* refuses (409, upstream's ``Apply failed with N conflict(s)`` text) to change a field whose
  current value another manager applied, unless ``force=true`` (``--force-conflicts``).

Fields set by updates (PUT, merge/strategic/JSON patch) are not owned by anyone here; upstream
gives them to the updating manager (docs/api.md lists this deviation)."""

from __future__ import annotations

from typing import Any

from api.k8s import backend, strategic
from api.k8s.resources import Resource
from api.k8s.status import K8sError

Path = tuple[str, ...]
SERVER_META = ("resourceVersion", "uid", "creationTimestamp", "managedFields", "generation", "selfLink")


def config_of(obj: dict[str, Any]) -> dict[str, Any]:
    """What a manager applied: the object as sent, without server-set metadata and status."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in SERVER_META}
    return {**{k: v for k, v in obj.items() if k != "status"}, "metadata": meta}


def leaves(value: Any, prefix: Path = ()) -> dict[Path, Any]:
    """Leaf paths of a configuration: maps are entered, lists and scalars are leaves."""
    if isinstance(value, dict) and value:
        out: dict[Path, Any] = {}
        for k, v in value.items():
            out.update(leaves(v, (*prefix, str(k))))
        return out
    return {prefix: value} if prefix else {}


def _get(obj: Any, path: Path) -> Any:
    cur = obj
    for p in path:
        if not isinstance(cur, dict) or p not in cur:
            return None
        cur = cur[p]
    return cur


def _remove(obj: dict[str, Any], path: Path) -> None:
    if not path:
        return
    cur: Any = obj
    for p in path[:-1]:
        if not isinstance(cur, dict) or p not in cur:
            return
        cur = cur[p]
    if isinstance(cur, dict):
        cur.pop(path[-1], None)


def _same(a: Any, b: Any) -> bool:
    return a == b or (not isinstance(a, (dict, list)) and str(a) == str(b))


def _dotted(path: Path) -> str:
    return "".join(f".{p}" for p in path)


def conflicts(
    current: dict[str, Any], config: dict[str, Any], others: dict[str, dict[str, Any]], version: str
) -> list[tuple[str, str]]:
    """(manager, path) for every field ``config`` changes whose current value another manager
    applied."""
    found = []
    for path, value in leaves(config).items():
        if path[:1] in (("apiVersion",), ("kind",)) or path[:2] in (
            ("metadata", "name"),
            ("metadata", "namespace"),
        ):
            continue
        now = _get(current, path)
        if now is None or _same(now, value):
            continue
        for manager, theirs in sorted(others.items()):
            if _same(_get(theirs, path), now):
                found.append((manager, _dotted(path)))
    return found


def conflict_error(res: Resource, name: str, found: list[tuple[str, str]], version: str) -> K8sError:
    """Upstream's text: ``Apply failed with 1 conflict: conflict with "m" using v1: .spec.x``."""
    n = len(found)
    by: dict[str, list[str]] = {}
    for manager, path in found:
        by.setdefault(manager, []).append(path)
    if n == 1:
        ((manager, path),) = found
        message = f'Apply failed with 1 conflict: conflict with "{manager}" using {version}: {path}'
    else:
        parts = [
            f'conflicts with "{m}" using {version}:\n' + "\n".join(f"- {p}" for p in paths)
            for m, paths in by.items()
        ]
        message = f"Apply failed with {n} conflicts: " + "\n".join(parts)
    return K8sError(
        409,
        message,
        reason="Conflict",
        details={
            "kind": res.plural,
            **({"group": res.group} if res.group else {}),
            "name": name,
            "causes": [
                {"reason": "FieldManagerConflict", "message": f'conflict with "{m}"', "field": p}
                for m, p in found
            ],
        },
    )


def merge(
    res: Resource,
    name: str,
    current: dict[str, Any],
    config: dict[str, Any],
    manager: str,
    applied: dict[str, dict[str, Any]],
    *,
    force: bool,
) -> dict[str, Any]:
    """The object after ``manager`` applies ``config`` onto ``current`` (the stored manifest),
    given every manager's last applied configuration."""
    others = {m: c for m, c in applied.items() if m != manager}
    if not force:
        found = conflicts(current, config, others, res.version)
        if found:
            raise conflict_error(res, name, found, res.version)
    out = strategic.apply({}, current)  # a deep copy of the maps
    new = leaves(config)
    for path in leaves(applied.get(manager) or {}):
        if path in new or any(path[: len(p)] == p for p in new):
            continue
        if any(_get(c, path) is not None for c in others.values()):
            continue
        _remove(out, path)
    merged: dict[str, Any] = strategic.apply(out, config)
    return merged


def applied_configs(conn: Any, kind: str, namespace: str, name: str) -> dict[str, dict[str, Any]]:
    """Each manager's last applied configuration of the object, since it was last created."""
    out: dict[str, dict[str, Any]] = {}
    for ev in backend.stream_events(conn, kind, namespace, name):
        if ev.type.endswith("Deleted"):
            out.clear()
            continue
        meta = ev.meta or {}
        config = meta.get("applied")
        if meta.get("operation") != "Apply" or not isinstance(config, dict) or not meta.get("fieldManager"):
            continue
        if config.get("kind") != kind or (config.get("metadata") or {}).get("name") != name:
            continue  # a Job's compiled children carry the Job's request meta
        out[str(meta["fieldManager"])] = config
    return out
