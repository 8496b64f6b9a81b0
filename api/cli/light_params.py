"""Typer coerces every command-line value through a pydantic ``TypeAdapter`` (``typer._adapters``):
building the first one imports pydantic and its plugin loader, ~45 ms of every command that takes
a string argument. For the parameters whose coercion is the identity, a ``str`` value for a
``str`` parameter (``str | None`` included), a ``bool`` for a ``bool`` and a list or tuple of
``str`` for ``list[str]`` (and None for any of them, which Typer answers itself), this
module answers without pydantic; anything else (numbers, enums, paths, files, a custom parser, a
value of another type) goes through Typer's own coercion, unchanged.

``install()`` patches ``typer.core.build_runtime_param`` only after checking that Typer's
internals still look the way this module expects; when they do not (a Typer upgrade reshaped
them), it installs nothing and Typer runs as shipped. tests/api/test_light_params.py compares
both paths value by value and checks that a CLI run loads no pydantic.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, get_args, get_origin

_installed = False


def _typer_shape_ok() -> bool:
    """Whether Typer's coercion layer is the one this module was written against."""
    try:
        import typer.core as core
        from typer import _coercion as coercion
    except ImportError:
        return False
    original = getattr(coercion, "build_runtime_param", None)
    base = getattr(coercion, "RuntimeParam", None)
    desc = getattr(coercion, "TypeDescriptor", None)
    if original is None or base is None or desc is None:
        return False
    if getattr(core, "build_runtime_param", None) is not original:
        return False
    if not (dataclasses.is_dataclass(base) and dataclasses.is_dataclass(desc)):
        return False
    if [f.name for f in dataclasses.fields(base)] != ["parameter_info", "annotation"]:
        return False
    if not {"annotation", "parameter_info", "file_annotation"} <= {f.name for f in dataclasses.fields(desc)}:
        return False
    abstract = getattr(base, "__abstractmethods__", frozenset())
    if set(abstract) != {"_coerce_value"}:
        return False
    if list(inspect.signature(base._coerce_value).parameters) != ["self", "value", "param", "ctx"]:
        return False
    tp = getattr(core, "_TyperParameter", None)
    return tp is not None and callable(getattr(tp, "get_runtime_param", None))


def light_kind(descriptor: Any) -> str | None:
    """``"str"``, ``"bool"`` or ``"list[str]"``: the parameter's coercion is the identity on
    values of that type (None, which Typer answers before coercing, included)."""
    info = descriptor.parameter_info
    if descriptor.file_annotation is not None or getattr(info, "parser", None) is not None:
        return None
    ann = descriptor.annotation
    if ann is str:
        return "str"
    if ann is bool:
        return "bool"
    if get_origin(ann) is list and get_args(ann) == (str,):
        return "list[str]"
    return None


def install() -> bool:
    """Patch Typer once; returns whether the light path is active."""
    global _installed
    if _installed:
        return True
    if not _typer_shape_ok():
        return False
    import typer.core as core
    from typer import _coercion as coercion

    original = coercion.build_runtime_param

    @dataclasses.dataclass(frozen=True)
    class LightRuntimeParam(coercion.RuntimeParam):  # type: ignore[misc,name-defined]
        """Identity on strings; Typer's own coercion (built on first need) for anything else."""

        kind: str
        descriptor: Any

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            if (self.kind == "str" and type(value) is str) or (self.kind == "bool" and type(value) is bool):
                return value
            if (
                self.kind == "list[str]"
                and isinstance(value, (list, tuple))
                and all(type(v) is str for v in value)
            ):
                return list(value)
            return original(self.descriptor)._coerce_value(value, param=param, ctx=ctx)

    def build_runtime_param(descriptor: Any) -> Any:
        kind = light_kind(descriptor)
        if kind is None:
            return original(descriptor)
        return LightRuntimeParam(
            parameter_info=descriptor.parameter_info,
            annotation=descriptor.annotation,
            kind=kind,
            descriptor=descriptor,
        )

    build_runtime_param.original = original  # type: ignore[attr-defined]
    core.build_runtime_param = build_runtime_param  # type: ignore[assignment]
    _installed = True
    return True


def uninstall() -> None:
    """Undo ``install`` (tests)."""
    global _installed
    import typer.core as core

    original = getattr(core.build_runtime_param, "original", None)
    if original is not None:
        core.build_runtime_param = original
    _installed = False


__all__ = ["install", "light_kind", "uninstall"]
