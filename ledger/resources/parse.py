"""Reading manifests: YAML or JSON text → documents → validated objects.

``iter_documents`` streams a source one document at a time (``kind: List`` and its ``*List``
cousins are flattened into their items; empty documents are skipped but still counted, so
"document 3" is the third document of the file as the user sees it). A malformed document
raises :class:`DocumentParseError` with its line number; documents before it were already
yielded. ``validate`` turns a document into a model or a list of :class:`FieldError`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import IO, Any

import yaml

from ledger.resources.bounded import Loader, check_node, duplicate_message, duplicate_paths, loads_json
from ledger.resources.errors import DocumentParseError, FieldError
from ledger.resources.kinds import UnknownKindError, WrongApiVersionError, check_api_version
from ledger.resources.models import Resource, validate_raw

__all__ = [
    "CappedText",
    "Document",
    "MANIFEST_SUFFIXES",
    "iter_documents",
    "iter_path",
    "load_objects",
    "manifest_files",
    "parse_documents",
    "validate",
]

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")

_Loader: Any = Loader  # libyaml when available (ledger.resources.bounded)


@dataclass(frozen=True, slots=True)
class Document:
    """One object read from a source. ``raw`` is the document as parsed (not yet validated)."""

    index: int  # 1-based document number in the source
    source: str  # file path, "-" for stdin, "request body"...
    raw: Mapping[str, Any]
    line: int | None = None  # 1-based line where the document starts (YAML only)
    item: int | None = None  # 1-based position inside a `kind: List` document
    duplicates: tuple[str, ...] = ()  # paths of keys given twice (refused by validate)

    @property
    def kind(self) -> str:
        kind = self.raw.get("kind")
        return kind if isinstance(kind, str) else ""

    @property
    def api_version(self) -> str:
        value = self.raw.get("apiVersion")
        return value if isinstance(value, str) else ""

    @property
    def name(self) -> str:
        meta = self.raw.get("metadata")
        name = meta.get("name") if isinstance(meta, Mapping) else None
        return name if isinstance(name, str) else ""

    @property
    def namespace(self) -> str | None:
        meta = self.raw.get("metadata")
        ns = meta.get("namespace") if isinstance(meta, Mapping) else None
        return ns if isinstance(ns, str) and ns else None

    @property
    def location(self) -> str:
        where = f"document {self.index}"
        if self.item is not None:
            where += f" item {self.item}"
        return f"{where} of {self.source}"


def parse_documents(text: str, source: str = "-") -> list[Document]:
    """All documents of a YAML or JSON text. Raises DocumentParseError on malformed input."""
    return list(iter_documents(text, source))


def iter_documents(stream: str | IO[str], source: str = "-") -> Iterator[Document]:
    """Stream documents from text or a text file object, one at a time."""
    head, rest = _peek(stream)
    if head.lstrip().startswith(("{", "[")):
        text = head + (rest.read() if rest is not None else "")
        yield from _json_documents(text, source)
        return
    body: str | _Prefixed = head if rest is None else _Prefixed(head, rest, source)
    yield from _yaml_documents(body, source)


def iter_path(path: str | Path) -> Iterator[Document]:
    """Documents of a file, or of every ``*.yaml|*.yml|*.json`` file under a directory, read
    recursively in path order (``kubectl apply -R -f DIR``). ``"-"`` reads stdin."""
    if str(path) == "-":
        import sys

        with _utf8(None, "-"):
            yield from iter_documents(sys.stdin, "-")
        return
    for file in manifest_files(path):
        with _utf8(file, str(file)), file.open(encoding="utf-8") as fh:
            yield from iter_documents(fh, str(file))


def manifest_files(path: str | Path) -> list[Path]:
    """The files ``iter_path`` reads for ``path``: the file itself, or every manifest under a
    directory in path order."""
    p = Path(path)
    if p.is_dir():
        return sorted(f for f in p.rglob("*") if f.is_file() and f.suffix in MANIFEST_SUFFIXES)
    return [p]


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n % 2**20 == 0 else f"{n} bytes"


class CappedText:
    """A text stream that refuses to hand out more than ``limit`` characters in total (counted
    over every stream sharing ``spent``): reading stops there with a DocumentParseError, so a
    huge stdin is refused while it is read instead of being parsed whole."""

    def __init__(self, inner: IO[str], limit: int, source: str, spent: list[int] | None = None) -> None:
        self._inner = inner
        self._limit = limit
        self._spent = spent if spent is not None else [0]
        self.name = source

    def read(self, size: int = -1) -> str:
        room = self._limit - self._spent[0]
        chunk = self._inner.read(room + 1 if size < 0 or size > room + 1 else size)
        self._spent[0] += len(chunk)
        if self._spent[0] > self._limit:
            raise DocumentParseError(
                f"the input is over the limit of one apply ({_size(self._limit)}; raise it with "
                "--max-bytes or PODLEDGER_MAX_BODY)",
                source=self.name,
                index=None,
                line=None,
            )
        return chunk


@contextmanager
def _utf8(file: Path | None, source: str) -> Iterator[None]:
    """Turn a decoding failure while reading ``source`` into a DocumentParseError naming it."""
    try:
        yield
    except UnicodeDecodeError as exc:
        raise DocumentParseError(
            f"not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start} of a read block)",
            source=source,
            index=None,
            line=None,
        ) from None


def validate(doc: Document) -> tuple[Resource | None, list[FieldError]]:
    """Validate one document: ``(object, [])`` or ``(None, [FieldError, ...])``."""
    kind, api_version = doc.raw.get("kind"), doc.raw.get("apiVersion")
    namespace = doc.namespace

    def err(field: str, message: str, *, kind_name: str = doc.kind, ns: str | None = namespace) -> FieldError:
        return FieldError(kind_name, ns, doc.name, field, message, doc.source, doc.index, doc.item)

    errors: list[FieldError] = []
    if not isinstance(api_version, str) or not api_version:
        errors.append(
            err("apiVersion", "required value" if api_version is None else "must be a non-empty string")
        )
    if not isinstance(kind, str) or not kind:
        errors.append(err("kind", "required value" if kind is None else "must be a non-empty string"))
    if errors or not isinstance(kind, str) or not isinstance(api_version, str):
        return None, errors
    try:
        info = check_api_version(kind, api_version)
    except UnknownKindError as exc:
        return None, [err("kind", str(exc))]
    except WrongApiVersionError as exc:
        return None, [err("apiVersion", str(exc))]
    ns = (namespace or "default") if info.namespaced else None
    if doc.duplicates:  # upstream's strict decoding: a key given twice is an error, not "last wins"
        return None, [err(p, duplicate_message(p), kind_name=info.kind, ns=ns) for p in doc.duplicates]
    unsafe = unsafe_values(doc.raw)
    if unsafe:
        return None, [err(path, message, kind_name=info.kind, ns=ns) for path, message in unsafe]
    obj, problems = validate_raw(kind, doc.raw)
    return obj, [err(path, message, kind_name=info.kind, ns=ns) for path, message in problems]


def load_objects(stream: str | IO[str], source: str = "-") -> tuple[list[Resource], list[FieldError]]:
    """Parse and validate every document. Raises DocumentParseError on malformed YAML/JSON."""
    objects: list[Resource] = []
    errors: list[FieldError] = []
    for doc in iter_documents(stream, source):
        obj, errs = validate(doc)
        if obj is not None:
            objects.append(obj)
        errors.extend(errs)
    return objects, errors


# --------------------------------------------------------------------------- internals


class _Prefixed:
    """A text stream whose first characters were already read (to sniff JSON vs YAML)."""

    def __init__(self, head: str, rest: IO[str], name: str) -> None:
        self._head = head
        self._rest = rest
        self.name = name

    def read(self, size: int = -1) -> str:
        if self._head:
            if size < 0:
                out, self._head = self._head + self._rest.read(), ""
                return out
            out, self._head = self._head[:size], self._head[size:]
            return out
        return self._rest.read(size)


def _peek(stream: str | IO[str]) -> tuple[str, IO[str] | None]:
    if isinstance(stream, str):
        return stream, None
    head = stream.read(4096)
    while head and not head.strip():  # skip leading blank chunks to see the first character
        more = stream.read(4096)
        if not more:
            break
        head += more
    return head, stream


MAX_DEPTH = 100  # nesting levels of a document (Kubernetes manifests need about 15)
INT64 = (-(2**63), 2**63 - 1)
# C0 controls except tab, newline and carriage return (legal in annotation values), and DEL
_CONTROL = frozenset(chr(c) for c in (*range(0x20), 0x7F)) - {"\t", "\n", "\r"}


def _too_deep(data: Any) -> bool:
    """Whether ``data`` nests deeper than MAX_DEPTH (iterative: no recursion on hostile input)."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > MAX_DEPTH:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return False


def _path(parent: str, key: object) -> str:
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else str(key)


def unsafe_values(data: Any) -> list[tuple[str, str]]:
    """(field path, problem) for every integer outside the signed 64-bit range and every string
    (or key) holding NUL or another control character: PostgreSQL cannot store them (jsonb has
    no NUL, bigint has 64 bits), so they are refused as field errors instead of failing later."""
    problems: list[tuple[str, str]] = []
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            for k, v in value.items():
                sub = _path(path, k)
                if isinstance(k, str) and any(ch in _CONTROL for ch in k):
                    problems.append((path or "(document)", "a key contains a NUL or control character"))
                    continue
                stack.append((sub, v))
        elif isinstance(value, list):
            stack.extend((_path(path, i), v) for i, v in enumerate(value))
        elif isinstance(value, bool):
            continue
        elif isinstance(value, int):
            if not INT64[0] <= value <= INT64[1]:
                problems.append((path, "integer out of range (must fit in 64 bits)"))
        elif isinstance(value, Decimal):
            if value.is_finite() and abs(value) >= 2**63:
                problems.append((path, "number out of range (must fit in 64 bits)"))
        elif isinstance(value, str) and any(ch in _CONTROL for ch in value):
            problems.append((path, "must not contain NUL or control characters"))
    return sorted(problems)


def _item_duplicates(duplicates: Sequence[str], i: int) -> tuple[str, ...]:
    """The duplicate paths under ``items[i]`` of a List, relative to the item."""
    prefix = f"items[{i}]"
    return tuple(
        p[len(prefix) :].lstrip(".") for p in duplicates if p.startswith((prefix + ".", prefix + "["))
    )


def _expand(
    data: Any, *, index: int, source: str, line: int | None, duplicates: Sequence[str] = ()
) -> Iterator[Document]:
    if data is None:
        return
    if _too_deep(data):
        raise DocumentParseError(
            f"the document is nested more than {MAX_DEPTH} levels deep", source=source, index=index, line=line
        )
    if not isinstance(data, dict):
        raise DocumentParseError(
            f"a document must be an object with apiVersion, kind and metadata, got {type(data).__name__}",
            source=source,
            index=index,
            line=line,
        )
    kind = data.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(data.get("items"), list):
        outside = [p for p in duplicates if not p.startswith("items[")]
        if outside:
            raise DocumentParseError(
                f"{kind}: {duplicate_message(outside[0])}", source=source, index=index, line=line
            )
        for i, item in enumerate(data["items"], start=1):
            if not isinstance(item, dict):
                raise DocumentParseError(
                    f"item {i} of the {kind} must be an object, got {type(item).__name__}",
                    source=source,
                    index=index,
                    line=line,
                )
            dups = _item_duplicates(duplicates, i - 1)
            yield Document(index=index, source=source, raw=item, line=line, item=i, duplicates=dups)
        return
    yield Document(index=index, source=source, raw=data, line=line, duplicates=tuple(duplicates))


def _yaml_documents(body: str | _Prefixed, source: str) -> Iterator[Document]:
    loader = _Loader(body)
    index = 0
    try:
        while True:
            try:
                if not loader.check_node():
                    break
                index += 1
                node = loader.get_node()
                line = node.start_mark.line + 1 if node is not None else None
                # alias expansion capped and duplicate keys found before anything is built
                dups = check_node(node, source=source, index=index) if node is not None else []
                data = loader.construct_document(node) if node is not None else None
            except yaml.MarkedYAMLError as exc:
                mark = exc.problem_mark or exc.context_mark
                problem = " ".join(p for p in (exc.context, exc.problem) if p) or str(exc)
                raise DocumentParseError(
                    problem,
                    source=source,
                    index=max(index, 1),
                    line=mark.line + 1 if mark is not None else None,
                    column=mark.column + 1 if mark is not None else None,
                ) from None
            except yaml.YAMLError as exc:
                raise DocumentParseError(str(exc), source=source, index=max(index, 1), line=None) from None
            except RecursionError:
                raise DocumentParseError(
                    f"the document is nested more than {MAX_DEPTH} levels deep",
                    source=source,
                    index=max(index, 1),
                    line=None,
                ) from None
            yield from _expand(data, index=index, source=source, line=line, duplicates=dups)
    finally:
        loader.dispose()


def _json_documents(text: str, source: str) -> Iterator[Document]:
    try:
        data, dups = loads_json(text)
    except json.JSONDecodeError as exc:
        raise DocumentParseError(exc.msg, source=source, index=1, line=exc.lineno, column=exc.colno) from None
    except RecursionError:
        raise DocumentParseError(
            f"the document is nested more than {MAX_DEPTH} levels deep", source=source, index=1, line=1
        ) from None
    if isinstance(data, list):
        for i, item in enumerate(data, start=1):
            item_dups = duplicate_paths(item) if dups else []
            yield from _expand(item, index=i, source=source, line=None, duplicates=item_dups)
    else:
        yield from _expand(data, index=1, source=source, line=1, duplicates=dups)
