"""Plain-text output for the CLI without importing Rich (~25 ms of every start).

When the output is not a terminal, the consoles of ``api.cli.console`` print no styles, so what
Rich writes for a plain string or a borderless table is plain text whose layout this module
reproduces character for character, for the cases it can decide cheaply: printable text with no
tab, no control character and no emoji code Rich would replace (``:smile:``); tables whose
cells are printable ASCII on one line and whose natural width fits the console. ``render_text``
and ``Table.render`` return None for anything else, and the caller prints through Rich.
tests/api/test_plain.py compares both on seeded random strings and tables.

``Table`` is also what the commands build: ``to_rich()`` turns it into the ``rich.table.Table``
with the same settings when Rich has to print it (a terminal, or a case this module declines).
"""

from __future__ import annotations

import re
from typing import Any

# Rich's emoji code pattern (rich._emoji_replace): ``:name:`` or ``:name-text:``/``:name-emoji:``
_EMOJI_CODE = re.compile(r"(:(\S*?)(?:(?:\-)(emoji|text))?:)")


def _has_emoji_code(text: str) -> bool:
    """Whether Rich would replace an emoji code in ``text``: a match of its pattern whose name
    is in its emoji table (loaded only when something matches, e.g. JSON or a time of day)."""
    names = [m[1] for m in _EMOJI_CODE.findall(text)]
    if not names:
        return False
    try:
        from rich._emoji_codes import EMOJI
    except ImportError:  # Rich moved its table: assume the worst, Rich prints it
        return True
    return any(name.lower() in EMOJI for name in names)


def _simple_line(line: str) -> bool:
    return line.isprintable()


def render_text(text: str) -> str | None:
    """What a Rich console (markup and highlighting off, soft wrap) writes for ``print(text)``
    when it is not a terminal, or None if this module cannot say for sure."""
    if _has_emoji_code(text):
        return None
    if not all(_simple_line(line) for line in text.split("\n")):
        return None
    return text + "\n"


def _ascii_cell(cell: str) -> bool:
    return cell.isascii() and cell.isprintable()


class Table:
    """A borderless table (``box=None``) with Rich's default padding of one space each side;
    ``pad_edge=False`` drops the padding at the left and right edges."""

    def __init__(
        self, *headers: str, pad_edge: bool = True, show_header: bool = True, fold_last: bool = False
    ) -> None:
        self.headers: list[str] = list(headers)
        self.rows: list[list[str]] = []
        self.pad_edge = pad_edge
        self.show_header = show_header
        self.fold_last = fold_last  # Rich wraps the last column's text when it is too wide

    def add_column(self, header: str) -> None:
        self.headers.append(header)

    def add_row(self, *cells: str) -> None:
        self.rows.append(list(cells))

    def to_rich(self) -> Any:
        from rich.table import Table as RichTable

        table = RichTable(*self.headers, box=None, pad_edge=self.pad_edge, show_header=self.show_header)
        if self.fold_last and self.headers:
            table.columns[-1].overflow = "fold"
        for row in self.rows:
            table.add_row(*row)
        return table

    def render(self, width: int) -> str | None:
        """Rich's output for this table on a console ``width`` columns wide, or None."""
        n = len(self.headers)
        if n == 0 or any(len(r) != n for r in self.rows):
            return None
        lines = ([self.headers] if self.show_header else []) + self.rows
        if not lines:
            return None
        for row in lines:
            for cell in row:
                if type(cell) is not str or not _ascii_cell(cell) or _has_emoji_code(cell):
                    return None
        widths = [max(len(row[i]) for row in lines) for i in range(n)]
        if 0 in widths:
            return None  # an empty column: Rich gives it a width of its own
        left = [0 if i == 0 and not self.pad_edge else 1 for i in range(n)]
        right = [0 if i == n - 1 and not self.pad_edge else 1 for i in range(n)]
        total = sum(widths) + sum(left) + sum(right)
        if total > width:
            return None
        out = []
        for row in lines:
            parts = []
            for i, cell in enumerate(row):
                # Rich strips a cell's trailing spaces before padding it to the column width
                parts.append(" " * left[i] + cell.rstrip(" ").ljust(widths[i]) + " " * right[i])
            out.append("".join(parts))
        return "\n".join(out) + "\n"


__all__ = ["Table", "render_text"]
