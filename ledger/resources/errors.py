"""Error types of the resource layer.

```
ValueError
 ├── kinds.UnknownKindError         unknown kind name
 ├── kinds.WrongApiVersionError     kind not served at that apiVersion
 └── DocumentParseError             a YAML/JSON document could not be read (has a line number)
FieldError                          one problem with one field of one object (a value, not raised)
InvalidObjectError(ValueError)      raised by helpers that need a valid object; carries FieldErrors
```
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["DocumentParseError", "FieldError", "InvalidObjectError", "format_path"]


def format_path(loc: tuple[str | int, ...] | list[str | int]) -> str:
    """``("spec", "containers", 0, "resources", "requests", "cpu")`` → ``spec.containers[0].resources.requests.cpu``.

    Map keys that are not simple identifiers are bracketed like Kubernetes does:
    ``spec.containers[0].resources.requests[nvidia.com/gpu]``.
    """
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.replace("_", "").replace("-", "").isalnum():
            out += f".{part}" if out else part
        else:
            out += f"[{part}]"
    return out


@dataclass(frozen=True, slots=True)
class FieldError:
    """One validation problem, naming the object and the field path."""

    kind: str  # "PodGroup" ("" when the document has no usable kind)
    namespace: str | None  # None for cluster-scoped kinds or when unknown
    name: str  # "" when the document has no name
    field: str  # "spec.schedulingPolicy.gang.minCount" ("" = the whole document)
    message: str  # "must be >= 1"
    source: str = ""  # "examples/x.yaml", "-", "request body"
    index: int | None = None  # 1-based document number in the source
    item: int | None = None  # 1-based item number inside a `kind: List` document

    @property
    def object_ref(self) -> str:
        name = self.name or "<unnamed>"
        ref = f"{self.namespace}/{name}" if self.namespace else name
        return f"{self.kind} {ref}" if self.kind else ref

    @property
    def location(self) -> str:
        if self.index is None:
            return self.source
        where = f"document {self.index}"
        if self.item is not None:
            where += f" item {self.item}"
        return f"{where} of {self.source}" if self.source else where

    def __str__(self) -> str:
        text = f"error: {self.object_ref}: "
        if self.field:
            text += f"{self.field}: "
        text += self.message
        if self.location:
            text += f" ({self.location})"
        return text

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "field": self.field,
            "message": self.message,
            "source": self.source,
            "index": self.index,
            "item": self.item,
        }


class DocumentParseError(ValueError):
    """A document of a YAML/JSON source could not be parsed."""

    def __init__(
        self, message: str, *, source: str, index: int | None, line: int | None, column: int | None = None
    ) -> None:
        self.problem = message
        self.source = source
        self.index = index
        self.line = line
        self.column = column
        where = []
        if index is not None:
            where.append(f"document {index}")
        if line is not None:
            where.append(f"line {line}" + (f", column {column}" if column is not None else ""))
        location = f" ({', '.join(where)})" if where else ""
        super().__init__(f"error: error parsing {source}{location}: {message}")


@dataclass
class InvalidObjectError(ValueError):
    errors: list[FieldError] = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join(str(e) for e in self.errors)
