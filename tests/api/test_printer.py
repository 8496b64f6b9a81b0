"""``api.cli.printer``: podledger's plain output when stdout is not a terminal (kubectl's table
layout, no Rich), Rich on a real terminal (a pseudo-terminal), and what each command start loads.
kubectl itself is the oracle of the layout in tests/k8s/test_kubectl.py."""

from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import time

import pytest

from api.cli.printer import Printer, Table, clean_cell, render_plain
from tests.api.test_cli import EXAMPLES, PODLEDGER, ROOT, cli

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _table(headers: list[str], rows: list[list[str]], **kw: object) -> Table:
    t = Table(*headers, **kw)  # type: ignore[arg-type]
    for r in rows:
        t.add_row(*r)
    return t


def _lines(*lines: str) -> str:
    return "".join(line + "\n" for line in lines)


def test_plain_table_layout_is_kubectls():
    """Every column but the last: its widest cell + 3 spaces, at least 6; the last unpadded."""
    t = _table(
        ["NAMESPACE", "NAME", "STATUS", "NODE", "AGE"],
        [
            ["team-a", "llm-pretrain-0", "Bound", "gpu-node-1", "5m"],
            ["default", "p", "Pending", "<none>", "12s"],
        ],
    )
    text, widths = render_plain(t)
    assert text == (
        "NAMESPACE   NAME             STATUS    NODE         AGE\n"
        "team-a      llm-pretrain-0   Bound     gpu-node-1   5m\n"
        "default     p                Pending   <none>       12s\n"
    )
    assert widths == [12, 17, 10, 13]
    # narrow columns keep kubectl's minimal width of 6; an empty last cell leaves the padding
    text, _ = render_plain(_table(["A", "B", "C"], [["1", "2", ""]]))
    assert text == "A     B     C\n1     2     \n"
    # no header; a title is a line of its own; a one-column table is its cells
    assert render_plain(_table(["X", "Y"], [["a", "b"]], show_header=False))[0] == "a     b\n"
    assert render_plain(_table(["X"], [["a"]], title="Nodes"))[0] == "Nodes\nX\na\n"
    assert render_plain(Table("X", "Y"))[0] == "X     Y\n"  # header only


def test_later_rows_keep_the_wider_widths_of_earlier_ones():
    """A watch's rows (no header) stay under the header, and a wider row widens what follows."""
    first = _table(["NAME", "STATUS", "AGE"], [["web-1", "Pending", "1s"]])
    text1, w1 = render_plain(first)
    text2, w2 = render_plain(_table(["NAME", "STATUS", "AGE"], [["w", "Bound", "2s"]], show_header=False), w1)
    assert text1 + text2 == _lines("NAME    STATUS    AGE", "web-1   Pending   1s", "w       Bound     2s")
    wide = _table(["NAME", "STATUS", "AGE"], [["a-much-longer-name", "Bound", "3s"]], show_header=False)
    text3, w3 = render_plain(wide, w2)
    assert text3 == "a-much-longer-name   Bound     3s\n" and w3 == [21, 10]


def test_cells_stay_on_one_line_and_cannot_move_the_cursor():
    assert clean_cell("a\tb\nc\r\nd") == "a b c  d"
    assert clean_cell("red \x1b[31mX\x07") == "red \\x1b[31mX\\x07"
    assert (
        clean_cell("日本 é → \u200b") == "日本 é → \u200b"
    )  # printable or not, only control characters change
    text, _ = render_plain(_table(["NAME", "WHAT"], [["x\ny", "line 1\nline 2"]]))
    assert text.splitlines() == ["NAME   WHAT", "x y    line 1 line 2"]


def test_a_row_must_fit_the_columns():
    t = Table("A", "B")
    with pytest.raises(ValueError, match="a row of 3 cells in a table of 2 columns"):
        t.add_row("1", "2", "3")
    t.add_row("1", "2")
    with pytest.raises(ValueError, match="before the rows"):
        t.add_column("C")


def test_printer_writes_plain_text_when_not_a_terminal(monkeypatch):
    buf, ebuf = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdout", buf)
    monkeypatch.setattr(sys, "stderr", ebuf)
    out, err = Printer(), Printer(stderr=True)
    out.print("pods: 3 running :smile: [bold]x[/bold]")  # markup and emoji codes verbatim
    out.print(_table(["NAME", "AGE"], [["web-1", "1s"]]))
    out.print(_table(["NAME", "AGE"], [["w", "2s"]], show_header=False))  # remembered widths
    err.error('Pod "default/x" not found')
    err.warning("no authentication")
    assert buf.getvalue() == _lines(
        "pods: 3 running :smile: [bold]x[/bold]",
        "NAME    AGE",
        "web-1   1s",
        "w       2s",
    )
    assert ebuf.getvalue() == 'error: Pod "default/x" not found\nwarning: no authentication\n'


def test_printer_renders_through_rich_on_a_terminal(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    buf = Tty()
    monkeypatch.setattr(sys, "stdout", buf)
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("COLUMNS", "120")
    for var in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(var, raising=False)
    out = Printer()
    assert out.is_terminal()
    out.print(_table(["NAME", "AGE"], [["web-1", ":smile: [b]x[/b]"]]))
    out.error("bad")
    got = buf.getvalue()
    assert "\x1b[1m" in got  # bold header
    lines = [line.rstrip() for line in ANSI.sub("", got).splitlines()]
    assert lines == ["NAME    AGE", "web-1   :smile: [b]x[/b]", "error: bad"]


def _run_in_pty(args: list[str], env: dict[str, str], columns: int = 200) -> str:
    """Run ``args`` with stdin, stdout and stderr on a pseudo-terminal; its output."""
    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    proc = subprocess.Popen(args, stdin=secondary, stdout=secondary, stderr=secondary, cwd=ROOT, env=env)
    os.close(secondary)
    chunks = []
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # EIO: the process closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(primary)
        proc.wait(timeout=60)
    return b"".join(chunks).decode().replace("\r\n", "\n")


def _terminal_env() -> dict[str, str]:
    env = dict(os.environ, TERM="xterm-256color")
    for var in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "COLUMNS"):
        env.pop(var, None)
    return env


def test_get_on_a_terminal_is_rich_and_shows_what_a_pipe_shows(database):
    assert cli("apply", "-f", str(EXAMPLES)).returncode == 0
    piped = cli("get", "pods", "-A")
    assert piped.returncode == 0, piped.stderr
    assert "\x1b" not in piped.stdout
    shown = _run_in_pty([PODLEDGER, "get", "pods", "-A"], _terminal_env())
    assert "\x1b[1mNAMESPACE" in shown  # Rich's bold header
    rows = [line.split()[:-1] for line in ANSI.sub("", shown).splitlines() if line.strip()]
    assert rows == [line.split()[:-1] for line in piped.stdout.splitlines()]  # but AGE, which ticks
    missing = _run_in_pty([PODLEDGER, "get", "nosuch"], _terminal_env())
    assert re.search(r"\x1b\[[0-9;]*merror:\x1b\[0m the server doesn't have a resource type", missing), (
        missing
    )


def _modules_after(args: list[str], env: dict[str, str]) -> tuple[int, str, list[str]]:
    """Run the CLI in a fresh interpreter with stdout on a pipe: exit code, stdout, and the
    top-level packages it loaded."""
    code = (
        "import json, sys\n"
        f"sys.argv = ['podledger', *{args!r}]\n"
        "from api.cli.main import main\n"
        "rc = 0\n"
        "try:\n    main()\nexcept SystemExit as e:\n    rc = e.code or 0\n"
        "sys.stderr.write('MODULES ' + json.dumps([rc, sorted({m.split('.')[0] for m in sys.modules})]) + '\\n')\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120
    )
    line = [ln for ln in res.stderr.splitlines() if ln.startswith("MODULES ")]
    assert line, res.stderr
    rc, loaded = json.loads(line[-1][len("MODULES ") :])
    return rc, res.stdout, loaded


HEAVY = {"rich", "yaml", "sqlalchemy", "alembic", "numpy", "fastapi", "starlette", "scheduler"}


def test_plain_output_loads_no_rich(database):
    """Help, a user error and the read commands print without Rich (nor any other heavy
    package). Typer 0.29 coerces every non-flag parameter through a pydantic TypeAdapter, so
    a command with arguments loads pydantic (docs/benchmarks.md, ``startup``); ``--help`` does not."""
    env = dict(os.environ)  # PODLEDGER_DATABASE_URL: the test's database
    rc, text, loaded = _modules_after(["--help"], env)
    assert rc == 0 and "Usage:" in text and not (HEAVY | {"pydantic"}) & set(loaded)
    rc, _, loaded = _modules_after(["get", "nosuchkind", "-n", "x"], env)
    assert rc == 1 and not HEAVY & set(loaded)
    assert cli("apply", "-f", str(EXAMPLES)).returncode == 0
    for args in (["get", "pods", "-A"], ["get", "pods", "-n", "team-a", "-o", "wide"]):
        rc, text, loaded = _modules_after(args, env)
        assert rc == 0 and "llm-pretrain-0" in text and not HEAVY & set(loaded), (args, loaded)
    for args in (["log", "--limit", "5"], ["history", "pod", "team-a/llm-pretrain-0"]):
        rc, text, loaded = _modules_after(args, env)
        assert rc == 0 and text.startswith("POS   ") and "rich" not in loaded, (args, loaded)


def test_get_columns_line_up_under_the_header(database):
    """The whole command's output, as a script reads it: every cell starts under its header."""
    assert cli("apply", "-f", str(EXAMPLES)).returncode == 0
    res = cli("get", "pods", "-A", "-o", "wide")
    assert res.returncode == 0, res.stderr
    header, *rows = res.stdout.splitlines()
    starts = [m.start() for m in re.finditer(r"\S+", header)]
    assert header.split() == ["NAMESPACE", "NAME", "STATUS", "NODE", "AGE", "DETAIL"]
    assert len(rows) > 10
    for row in rows:
        for s in starts[1:]:
            assert row[s - 3 : s] == "   " and row[s] != " ", (row, s)
