"""``api.cli.plain`` writes what Rich writes (non-terminal console, markup and highlighting off,
soft wrap, 180 columns), on seeded random strings and tables; and the CLI's consoles use it."""

from __future__ import annotations

import io
import random

import pytest
from rich.console import Console

from api.cli import plain

WIDTH = 180
# letters, digits, spaces, the punctuation of names and messages, colons (emoji codes, times),
# brackets (Rich markup), non-ASCII (wide and narrow), tabs, control characters, newlines
ALPHABET = (
    list("abcdefghijklmnopqrstuvwxyzABCXYZ0123456789")
    + [" "] * 8
    + list("-_./=,()'\"<>%!?#*|")
    + [":"] * 3
    + [
        "[",
        "]",
        "[bold]",
        "[/]",
        ":smile:",
        ":SMILE:",
        ":smile-text:",
        ":thumbs_up:",
        ":no_such_emoji:",
        "12:30:45",
    ]
    + ["é", "…", "→", "─", "日本", "😄", "\u200b", "\u0301"]
    + ["\t", "\r", "\x07", "\x1b[31m", "\x00"]
    + ["\n"]
)


def rich_console(buf: io.StringIO) -> Console:
    return Console(file=buf, highlight=False, soft_wrap=True, width=WIDTH, markup=False)


def rich_text(text: str) -> str:
    buf = io.StringIO()
    rich_console(buf).print(text)
    return buf.getvalue()


def rich_table(table: plain.Table) -> str:
    buf = io.StringIO()
    rich_console(buf).print(table.to_rich())
    return buf.getvalue()


def random_string(rng: random.Random, max_len: int, alphabet: list[str]) -> str:
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, max_len)))


def test_plain_strings_match_rich():
    rng = random.Random(20)
    decided = 0
    for i in range(3000):
        # every third string from a mild alphabet, so that most are decided by plain
        alphabet = ALPHABET if i % 3 == 0 else ALPHABET[:70]
        text = random_string(rng, rng.choice((5, 40, 250)), alphabet)
        got = plain.render_text(text)
        if got is not None:
            decided += 1
            assert got == rich_text(text), repr(text)
    assert decided > 1500  # plain decides the common cases


def random_table(rng: random.Random) -> plain.Table:
    ncols = rng.randint(1, 7)
    mild = ALPHABET[:70] if rng.random() < 0.85 else ALPHABET
    wide = rng.random() < 0.2  # near and over the console width: Rich shrinks columns
    table = plain.Table(
        *(random_string(rng, 12, mild) for _ in range(ncols)),
        pad_edge=rng.random() < 0.5,
        show_header=rng.random() < 0.8,
        fold_last=rng.random() < 0.5,
    )
    for _ in range(rng.randint(0, 8)):
        table.add_row(*(random_string(rng, 60 if wide else 18, mild) for _ in range(ncols)))
    return table


def test_plain_tables_match_rich():
    rng = random.Random(2020)
    decided = 0
    for _ in range(2000):
        table = random_table(rng)
        got = table.render(WIDTH)
        if got is not None:
            decided += 1
            assert got == rich_table(table), (table.headers, table.rows, table.pad_edge, table.show_header)
    assert decided > 800


@pytest.mark.parametrize("total", [WIDTH - 1, WIDTH, WIDTH + 1])
def test_plain_tables_at_the_console_width(total):
    """The boundary where Rich starts to shrink columns."""
    for pad_edge in (False, True):
        for ncols in (1, 2, 5):
            pad = 2 * ncols - (0 if pad_edge else 2)
            cells = [
                ("x" * ((total - pad) // ncols + (1 if i < (total - pad) % ncols else 0)))
                for i in range(ncols)
            ]
            cells[0] = cells[0][:-3] + " ab" if len(cells[0]) > 3 else cells[0]
            table = plain.Table(*(f"H{i}" for i in range(ncols)), pad_edge=pad_edge)
            table.add_row(*cells)
            got = table.render(WIDTH)
            if got is not None:
                assert got == rich_table(table)
            assert (got is None) == (total > WIDTH)


def test_emoji_codes_only_when_rich_knows_the_name():
    assert plain.render_text('at 12:30:45 {"a":"b"}') == 'at 12:30:45 {"a":"b"}\n'
    for text in ("done :smile:", "done :Smile-text:", "x:thumbs_up:y"):
        assert plain.render_text(text) is None
    assert plain.render_text("x :no_such_emoji: y") == rich_text("x :no_such_emoji: y")


def test_get_table_layout():
    table = plain.Table(pad_edge=False)
    for c in ("NAMESPACE", "NAME", "STATUS", "NODE", "AGE"):
        table.add_column(c)
    table.add_row("team-a", "llm-pretrain-0", "Running", "gpu-node-1", "5m")
    table.add_row("default", "p", "Pending", "<none>", "12s")
    assert table.render(WIDTH) == (
        "NAMESPACE  NAME            STATUS   NODE        AGE\n"
        "team-a     llm-pretrain-0  Running  gpu-node-1  5m \n"
        "default    p               Pending  <none>      12s\n"
    )
    assert table.render(WIDTH) == rich_table(table)


def test_lazy_console_prints_plain_without_rich_and_falls_back(monkeypatch, capsys):
    from api.cli import console

    monkeypatch.setattr(console, "_WIDTH", WIDTH)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    lazy = console.LazyConsole()
    lazy.print("pods: 3 running")  # ": 3 " has no emoji code
    lazy.print("done :smile:")  # an emoji code: Rich prints it
    table = plain.Table("A", "B")
    table.add_row("1", "日本")  # wide characters: Rich lays it out
    lazy.print(table)
    assert capsys.readouterr().out == "pods: 3 running\n" + rich_text("done :smile:") + rich_table(table)
    err = console.LazyConsole(stderr=True)
    err.print("error: x")
    assert capsys.readouterr().err == "error: x\n"


def test_lazy_console_leaves_terminals_and_forced_colour_to_rich(monkeypatch):
    from api.cli import console

    monkeypatch.setattr(console, "_WIDTH", WIDTH)
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert console.LazyConsole()._plain_stream() is None
    monkeypatch.delenv("FORCE_COLOR")
    monkeypatch.setattr(console, "_WIDTH", None)  # stdout was a terminal at start
    assert console.LazyConsole()._plain_stream() is None
