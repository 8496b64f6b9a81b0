"""What the commands print: they hand lines of text and tables (headers and rows of strings) to
``out`` (stdout) or ``err`` (stderr); this module alone decides how they look.

* Not a terminal (a pipe, a file, a test): podledger's own plain format, written without
  importing Rich. Text goes out as given, one ``print`` one line (or the lines it holds).
  Tables are laid out as kubectl's printer lays out ``kubectl get`` (a tab writer with a
  minimal cell width of 6 and a padding of 3): the header in capitals first, then one row per
  line, every column but the last as wide as its widest cell plus three spaces and at least
  six characters, the last cell unpadded. Widths count characters (code points), as kubectl
  counts runes. Later tables with the same headers (the rows a watch prints) keep the widths
  of the earlier ones when those are wider, as kubectl's ``RememberWidths`` does, so they stay
  under the header. A cell's tabs and line breaks become spaces and other control characters
  are escaped (``\\x1b``): a row stays one line and a cell cannot move a terminal's cursor.
  A table's title, if it has one, is a line of its own above it.
* A terminal: Rich renders the same tables (bold headers, columns three spaces apart, shrunk
  and wrapped to the window; ``wrap_last`` folds a long last column), errors and warnings get
  a red or yellow label, and progress bars draw on ``err.console``. Markup, emoji codes and
  highlighting are off: messages quote user input (names, field values) verbatim.

Whether a stream is a terminal is asked at every print (``isatty``), so a test or a command
that swaps ``sys.stdout`` is served correctly.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.console import Console

MIN_WIDTH = 6  # kubectl's tab writer: the minimal width of a cell, its padding included
PADDING = 3  # spaces after each cell but the last

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SPACES = "\t\n\r\v\f\x85"


def _escape(m: re.Match[str]) -> str:
    ch = m.group()
    return " " if ch in _SPACES else f"\\x{ord(ch):02x}"


def clean_cell(cell: str) -> str:
    """``cell`` on one line: tabs and line breaks as spaces, other control characters escaped."""
    return cell if cell.isprintable() else _CONTROL.sub(_escape, cell)


class Table:
    """Headers and rows of strings, as a command hands them over. ``show_header=False`` prints
    the rows only (a watch's later rows); ``wrap_last``: on a terminal the last column folds to
    the window instead of being shrunk (whole payloads and summaries); ``title``: a line above."""

    def __init__(
        self,
        *headers: str,
        show_header: bool = True,
        wrap_last: bool = False,
        title: str | None = None,
    ) -> None:
        self.headers: list[str] = list(headers)
        self.rows: list[list[str]] = []
        self.show_header = show_header
        self.wrap_last = wrap_last
        self.title = title

    def add_column(self, header: str) -> None:
        if self.rows:
            raise ValueError("add the columns before the rows")
        self.headers.append(header)

    def add_row(self, *cells: str) -> None:
        if len(cells) != len(self.headers):
            raise ValueError(f"a row of {len(cells)} cells in a table of {len(self.headers)} columns")
        self.rows.append(list(cells))


def render_plain(table: Table, widths: Sequence[int] = ()) -> tuple[str, list[int]]:
    """The plain text of ``table`` (module docstring) and the widths of its padded columns (all
    but the last); ``widths``: the widths of earlier rows under the same header, kept if wider."""
    lines = ([table.headers] if table.show_header else []) + table.rows
    cells = [[clean_cell(c) for c in row] for row in lines]
    padded = len(table.headers) - 1
    new = [max([MIN_WIDTH, *(len(row[i]) + PADDING for row in cells)]) for i in range(padded)]
    if len(widths) == padded:
        new = [max(a, b) for a, b in zip(new, widths, strict=True)]
    text = [clean_cell(table.title)] if table.title is not None else []
    text += ["".join(c.ljust(w) for c, w in zip(row, new, strict=False)) + row[-1] for row in cells]
    return "".join(line + "\n" for line in text), new


class Printer:
    """``print`` text or a ``Table`` to stdout (or stderr), plain or through Rich (module
    docstring)."""

    def __init__(self, *, stderr: bool = False) -> None:
        self.stderr = stderr
        self._console: Console | None = None
        self._widths: dict[tuple[str, ...], list[int]] = {}

    @property
    def stream(self) -> TextIO:
        return sys.stderr if self.stderr else sys.stdout

    def is_terminal(self) -> bool:
        try:
            return bool(self.stream.isatty())
        except (AttributeError, ValueError):  # no stream, or a closed one
            return False

    @property
    def console(self) -> Console:
        """The Rich console on the stream (for a terminal; Rich is imported here)."""
        stream = self.stream
        if self._console is None or self._console.file is not stream:
            from rich.console import Console

            self._console = Console(file=stream, highlight=False, markup=False, emoji=False, soft_wrap=True)
        return self._console

    def _write(self, text: str) -> None:
        stream = self.stream
        stream.write(text)
        stream.flush()

    def print(self, obj: str | Table = "") -> None:
        """One line of text (or the lines it holds), or a table."""
        if isinstance(obj, Table):
            self._table(obj)
        elif self.is_terminal():
            self.console.print(obj)
        else:
            self._write(obj + "\n")

    def error(self, message: str) -> None:
        """``error: message`` (the label red on a terminal)."""
        self._labelled("error:", "bold red", message)

    def warning(self, message: str) -> None:
        """``warning: message`` (the label yellow on a terminal)."""
        self._labelled("warning:", "bold yellow", message)

    def _labelled(self, label: str, style: str, message: str) -> None:
        if not self.is_terminal():
            self._write(f"{label} {message}\n")
            return
        from rich.text import Text

        self.console.print(Text.assemble((label, style), " ", message))

    def _table(self, table: Table) -> None:
        if not table.headers:
            return
        if self.is_terminal():
            self.console.print(_rich_table(table))
            return
        key = tuple(table.headers)
        text, self._widths[key] = render_plain(table, self._widths.get(key, ()))
        self._write(text)


def _rich_table(table: Table) -> object:
    from rich.table import Table as RichTable

    rich = RichTable(
        box=None,
        show_header=table.show_header,
        header_style="bold",
        pad_edge=False,
        padding=(0, PADDING, 0, 0),
        title=table.title,
        title_justify="left",
        title_style="bold",
    )
    last = len(table.headers) - 1
    for i, header in enumerate(table.headers):
        rich.add_column(header, overflow="fold" if i == last and table.wrap_last else "ellipsis")
    for row in table.rows:
        rich.add_row(*row)
    return rich


out = Printer()
err = Printer(stderr=True)


__all__ = ["MIN_WIDTH", "PADDING", "Printer", "Table", "clean_cell", "err", "out", "render_plain"]
