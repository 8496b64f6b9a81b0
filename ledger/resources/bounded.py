"""Bounded reading of untrusted YAML and JSON: alias bombs and duplicate keys.

Every YAML/JSON text podledger reads from a user (``podledger apply``, the JSON API, scenario
and what-if files, and, through :func:`load_body`, the Kubernetes-compatible API) goes through
these checks before a value is built from it:

- **Alias expansion is capped.** A YAML alias is a reference, so a few hundred bytes can name
  billions of nodes ("billion laughs"); everything that walks the value afterwards (validation,
  hashing, jsonb) pays for the expanded size. :func:`check_node` measures the expanded size on
  the composed node graph (each distinct node once, memoised, so the measure itself is linear in
  the text) and refuses a document when alias-driven nodes dominate a large expansion, with
  kubectl's words: ``document contains excessive aliasing``. The rule follows the one of the
  YAML library under kubectl (go-yaml, used by sigs.k8s.io/yaml): up to 400,000 nodes anything
  goes; beyond, the share of alias-driven nodes allowed falls linearly from 99 % to 10 % at
  4,000,000 nodes. A recursive alias (``&a [*a]``) is refused too.
- **Duplicate keys are refused**, not "last one wins": upstream's strict decoding
  (sigs.k8s.io/json, ``fieldValidation=Strict``, kubectl's default) reports them as
  ``duplicate field "spec.containers[0].image"``. :func:`check_node` (YAML) and
  :func:`loads_json` return the duplicated paths; the manifest reader turns each into a field
  error naming the object. YAML merge keys (``<<``) may be overridden, as in YAML itself.

For the Kubernetes API: ``load_body(body, content_type)`` decodes one request body (JSON, or
YAML when the content type says so) under both checks and raises :class:`BodyError` (a
``DocumentParseError``) whose ``problem`` is the message to answer 400 with, e.g. ``duplicate
field "metadata.name"`` or ``document contains excessive aliasing``; ``inspect_body`` returns the
duplicated paths instead of raising (for ``fieldValidation=Warn``/``Ignore``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import yaml

from ledger.resources.errors import DocumentParseError, format_path

__all__ = [
    "ALIAS_FREE_NODES",
    "ALIAS_LIMIT_NODES",
    "BodyError",
    "Loader",
    "check_node",
    "duplicate_message",
    "duplicate_paths",
    "inspect_body",
    "load_body",
    "load_yaml_values",
    "loads_json",
]

# libyaml is much faster on large files; fall back to the pure-Python loader
Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

ALIAS_FREE_NODES = 400_000  # up to this many expanded nodes, any share of aliases is fine
ALIAS_LIMIT_NODES = 4_000_000  # from this size on, at most 10 % of the nodes may come from aliases
_MERGE_TAG = "tag:yaml.org,2002:merge"


class BodyError(DocumentParseError):
    """A request body could not be decoded (malformed, a duplicate field, excessive aliasing)."""


def duplicate_message(path: str) -> str:
    """Upstream's wording for a key given twice (sigs.k8s.io/json strict decoding)."""
    return f'duplicate field "{path}"'


def _allowed_alias_share(nodes: int) -> float:
    if nodes <= ALIAS_FREE_NODES:
        return 0.99
    if nodes >= ALIAS_LIMIT_NODES:
        return 0.10
    done = (nodes - ALIAS_FREE_NODES) / (ALIAS_LIMIT_NODES - ALIAS_FREE_NODES)
    return 0.99 - 0.89 * done


def _children(
    node: yaml.Node, path: tuple[str | int, ...]
) -> Iterator[tuple[yaml.Node, tuple[str | int, ...]]]:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            label: str | int = key.value if isinstance(key, yaml.ScalarNode) else "?"
            yield key, path
            yield value, (*path, label)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            yield item, (*path, i)


def _mapping_duplicates(node: yaml.MappingNode, path: tuple[str | int, ...]) -> list[str]:
    seen: set[tuple[str, str]] = set()
    found: list[str] = []
    for key, _ in node.value:
        if not isinstance(key, yaml.ScalarNode) or key.tag == _MERGE_TAG:
            continue
        ident = (key.tag, key.value)
        if ident in seen:
            found.append(format_path((*path, key.value)))
        seen.add(ident)
    return found


def check_node(node: yaml.Node, *, source: str, index: int) -> list[str]:
    """Check one composed YAML document before it is constructed: raises DocumentParseError on
    excessive aliasing or a recursive alias; returns the paths of duplicated keys (first path by
    which each mapping is reached), in document order."""
    sizes: dict[int, int] = {}  # id(node) -> expanded node count (done)
    open_: set[int] = set()  # nodes whose subtree is being walked (an ancestor on the path)
    duplicates: list[str] = []
    stack: list[tuple[yaml.Node, tuple[str | int, ...], bool]] = [(node, (), False)]
    while stack:
        current, path, done = stack.pop()
        nid = id(current)
        if done:
            total = 1
            if isinstance(current, yaml.MappingNode):
                for key, value in current.value:
                    total += sizes[id(key)] + sizes[id(value)]
            elif isinstance(current, yaml.SequenceNode):
                for item in current.value:
                    total += sizes[id(item)]
            sizes[nid] = total
            open_.discard(nid)
            continue
        if nid in sizes:
            continue
        if nid in open_:
            line = current.start_mark.line + 1 if current.start_mark else None
            raise DocumentParseError(
                "a recursive alias (an anchor used inside itself)", source=source, index=index, line=line
            )
        open_.add(nid)
        stack.append((current, path, True))
        if isinstance(current, yaml.MappingNode):
            duplicates.extend(_mapping_duplicates(current, path))
        kids = list(_children(current, path))
        stack.extend((child, p, False) for child, p in reversed(kids))
    expanded, distinct = sizes[id(node)], len(sizes)
    if expanded > ALIAS_FREE_NODES and (expanded - distinct) / expanded > _allowed_alias_share(expanded):
        raise DocumentParseError(
            "document contains excessive aliasing",
            source=source,
            index=index,
            line=node.start_mark.line + 1 if node.start_mark else None,
        )
    return duplicates


def load_yaml_values(text: str, source: str) -> list[Any]:
    """Every document of a YAML text as plain values (None for empty ones), under both checks;
    a duplicate key raises. For YAML files that are not manifests (scenarios, what-if configs)."""
    loader = Loader(text)
    values: list[Any] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                values.append(None)
                continue
            index = len(values) + 1
            dups = check_node(node, source=source, index=index)
            if dups:
                raise DocumentParseError(
                    duplicate_message(dups[0]), source=source, index=index, line=node.start_mark.line + 1
                )
            values.append(loader.construct_document(node))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = " ".join(p for p in (exc.context, exc.problem) if p) or str(exc)
        line = mark.line + 1 if mark is not None else None
        raise DocumentParseError(problem, source=source, index=len(values) + 1, line=line) from None
    except yaml.YAMLError as exc:
        raise DocumentParseError(str(exc), source=source, index=len(values) + 1, line=None) from None
    finally:
        loader.dispose()
    return values


class _Pairs(dict[str, Any]):
    """A JSON object that had a key more than once (``dups`` holds those keys)."""

    __slots__ = ("dups",)
    dups: list[str]


def _pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(items)
    if len(out) == len(items):
        return out
    flagged = _Pairs(out)
    seen: set[str] = set()
    flagged.dups = []
    for key, _ in items:
        if key in seen:
            flagged.dups.append(key)
        seen.add(key)
    return flagged


def duplicate_paths(data: Any) -> list[str]:
    """Paths of the keys given twice in a value parsed by :func:`loads_json`."""
    found: list[str] = []
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict):
            if isinstance(value, _Pairs):
                found.extend(format_path((*path, k)) for k in value.dups)
            stack.extend((v, (*path, k)) for k, v in value.items() if isinstance(v, (dict, list)))
        elif isinstance(value, list):
            stack.extend((v, (*path, i)) for i, v in enumerate(value) if isinstance(v, (dict, list)))
    return sorted(set(found))


def loads_json(text: str | bytes, *, decimal: bool = True) -> tuple[Any, list[str]]:
    """Parse JSON (non-integers as Decimal, or float with ``decimal=False``) and return ``(value,
    duplicated key paths)``; a value with duplicates keeps the last one (callers refuse it).
    Raises json.JSONDecodeError or RecursionError."""
    flagged = False

    def hook(items: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal flagged
        out = _pairs(items)
        flagged = flagged or isinstance(out, _Pairs)
        return out

    data = json.loads(text, parse_float=Decimal if decimal else float, object_pairs_hook=hook)
    return data, (duplicate_paths(data) if flagged else [])


def inspect_body(
    body: bytes | str, content_type: str = "application/json", source: str = "request body"
) -> tuple[Any, list[str]]:
    """One request body as ``(plain value, duplicated key paths)`` (JSON, or YAML when
    ``content_type`` mentions yaml; an empty body is None; non-integer numbers are floats, as
    orjson and YAML give them). Raises BodyError when it cannot be read (malformed, not UTF-8,
    nested too deeply, more than one YAML document, excessive aliasing); duplicates are returned,
    not raised, for callers whose upstream only warns about them (``fieldValidation=Warn``)."""
    try:
        text = body.decode("utf-8") if isinstance(body, bytes) else body
    except UnicodeDecodeError:
        raise BodyError("the request body is not UTF-8 text", source=source, index=None, line=None) from None
    try:
        if "yaml" in content_type.lower():
            return _yaml_body(text, source)
        if not text.strip():
            return None, []
        return loads_json(text, decimal=False)
    except BodyError:
        raise
    except DocumentParseError as exc:
        raise BodyError(
            exc.problem, source=source, index=exc.index, line=exc.line, column=exc.column
        ) from None
    except json.JSONDecodeError as exc:
        raise BodyError(exc.msg, source=source, index=1, line=exc.lineno, column=exc.colno) from None
    except RecursionError:
        raise BodyError("the request body is nested too deeply", source=source, index=1, line=None) from None


def _yaml_body(text: str, source: str) -> tuple[Any, list[str]]:
    loader = Loader(text)
    try:
        node = loader.get_single_node()  # ComposerError on a second document
        if node is None:
            return None, []
        dups = check_node(node, source=source, index=1)
        return loader.construct_document(node), dups
    except yaml.composer.ComposerError as exc:
        if "single document" in str(exc):
            raise BodyError(
                "the request body holds more than one YAML document", source=source, index=2, line=None
            ) from None
        raise DocumentParseError(str(exc.problem or exc), source=source, index=1, line=None) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = " ".join(p for p in (exc.context, exc.problem) if p) or str(exc)
        raise DocumentParseError(
            problem, source=source, index=1, line=mark.line + 1 if mark else None
        ) from None
    except yaml.YAMLError as exc:
        raise DocumentParseError(str(exc), source=source, index=1, line=None) from None
    finally:
        loader.dispose()


def load_body(body: bytes | str, content_type: str = "application/json", source: str = "request body") -> Any:
    """:func:`inspect_body` that also refuses a duplicated key (BodyError ``duplicate field
    "path"``): the value of a body for ``fieldValidation=Strict`` (kubectl's default)."""
    value, dups = inspect_body(body, content_type, source)
    if dups:
        raise BodyError(duplicate_message(dups[0]), source=source, index=1, line=None)
    return value
