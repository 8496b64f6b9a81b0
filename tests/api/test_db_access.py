"""`podledger db url` / `db shell`: SQL access in one command; the reporting login reads the views
and can write nothing."""

from __future__ import annotations

import psycopg
import pytest

from tests.api.test_cli import EXAMPLES, cli


def test_reporting_url_reads_views_but_cannot_write(database):
    assert cli("apply", "-f", str(EXAMPLES)).returncode == 0
    assert cli("schedule").returncode == 0
    res = cli("db", "url", "--role", "reporting")
    assert res.returncode == 0, res.stderr
    url = res.stdout.strip()
    assert url.startswith("postgresql://podledger_reporting")
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT current_user").fetchone() == ("podledger_reporting",)
        rows = conn.execute("SELECT name, scheduled FROM v_group_wait_times ORDER BY name").fetchall()
        assert ("llm-pretrain", True) in rows and ("vision-pretrain", False) in rows
        for sql in (
            "SELECT count(*) FROM events",
            "INSERT INTO events (stream, version, type, data) VALUES ('x', 1, 'X', '{}')",
            "DELETE FROM objects",
            "CREATE TABLE sneaky (x int)",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(sql)
    with psycopg.connect(cli("db", "url").stdout.strip()) as conn:  # the owner sees all events
        assert conn.execute("SELECT count(*) FROM events").fetchone()[0] > 0
    assert cli("db", "url", "--role", "root").returncode == 1


def test_db_shell_runs_psql_as_the_role(database):
    assert cli("apply", "-f", str(EXAMPLES)).returncode == 0
    res = cli(
        "db", "shell", "--role", "reporting", "-c", "SELECT current_user, count(*) FROM v_group_wait_times"
    )
    assert res.returncode == 0, res.stderr
    assert "podledger_reporting" in res.stdout and "(1 row)" in res.stdout
    denied = cli("db", "shell", "--role", "reporting", "-c", "SELECT count(*) FROM events")
    assert denied.returncode != 0 and "permission denied for table events" in denied.stderr


def test_psql_with_the_reporting_url_reads_views_and_cannot_write(database):
    """The acceptance line as a user types it: ``psql "$(podledger db url --role reporting)"``."""
    import shutil
    import subprocess

    psql = shutil.which("psql")
    if psql is None:
        pytest.skip("psql is not installed")
    assert cli("apply", "-f", str(EXAMPLES)).returncode == 0
    assert cli("schedule").returncode == 0
    url = cli("db", "url", "--role", "reporting").stdout.strip()

    def run(sql: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [psql, url, "-X", "-v", "ON_ERROR_STOP=1", "-At", "-c", sql],
            capture_output=True,
            text=True,
            timeout=60,
        )

    read = run("SELECT name FROM v_group_wait_times WHERE scheduled ORDER BY name")
    assert read.returncode == 0, read.stderr
    assert "llm-pretrain" in read.stdout.split()
    for sql, table in (
        ("INSERT INTO events (stream, version, type, data) VALUES ('x', 1, 'X', '{}')", "events"),
        ("UPDATE objects SET status = '{}'", "objects"),
        ("DELETE FROM objects", "objects"),
    ):
        denied = run(sql)
        assert denied.returncode != 0 and f"permission denied for table {table}" in denied.stderr, (
            denied.stderr
        )
