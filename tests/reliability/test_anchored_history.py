"""Anchored history (issue 15): a signed checkpoint pins the log, whoever holds the database.

The bar: ledger 1 gets a checkpoint; ledger 2, built from slightly different inputs (its own hash
chain valid), fails ``verify --checkpoint`` with ledger 1's checkpoint; ledger 1 keeps passing
after more appends; a database superuser who rewrites any event the checkpoint covers and
recomputes every later hash (so plain ``verify`` passes) is caught; an inclusion proof from
``podledger prove`` verifies with the verifier key alone. Also: the API server's and the
worker's database sessions are not superuser sessions, and GET /podledger/v1/checkpoint serves a
checkpoint the same verifier accepts.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import orjson
import psycopg
import pytest

from ledger import db
from ledger.canonical import canonical, event_hash
from ledger.transparency import TransparencyError, verify_event_proof
from tests.conftest import _admin, new_database

from .conftest import PODLEDGER, ROOT, apply_text, event_count, nodes_yaml, pod_yaml, wait_until


def _cli(url: str, *args: str, key: Path | None = None) -> tuple[int, str]:
    env = dict(os.environ, PODLEDGER_DATABASE_URL=url)
    if key is not None:
        env["PODLEDGER_CHECKPOINT_KEY"] = str(key)
    p = subprocess.run([PODLEDGER, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    out = p.stdout + p.stderr
    assert "Traceback" not in out, out
    return p.returncode, out


def _inputs(database, pods: list[tuple[str, str]]) -> None:
    apply_text(database, nodes_yaml(2, "4"))
    apply_text(database, "---\n".join(pod_yaml(name, cpu) for name, cpu in pods))


@contextmanager
def _superuser(url: str) -> Iterator[psycopg.Connection]:
    with psycopg.connect(url, autocommit=True) as su:
        su.execute("SET session_replication_role = replica")  # the triggers are off: anything goes
        yield su


def _rewrite(su: psycopg.Connection, position: int) -> list[tuple]:
    """Change the event at ``position`` (its meta.actor) and recompute the hash of it and every later
    event, as a forger with superuser rights would. Returns the original rows for ``_restore``."""
    rows = su.execute(
        "SELECT position, stream, version, type, schema_version, event_id, data::text, meta::text, "
        "effective_at, prev_hash, hash, recorded_at FROM events WHERE position >= %s ORDER BY position",
        (position,),
    ).fetchall()
    prev = bytes(rows[0][9])
    for i, (pos, stream, version, typ, sv, eid, data, meta, eff, _p, _h, rec) in enumerate(rows):
        m = orjson.loads(meta)
        if i == 0:
            m["actor"] = "someone-else"
        h = event_hash(
            prev,
            stream=stream,
            version=version,
            type=typ,
            schema_version=sv,
            event_id=eid,
            data_bytes=canonical(orjson.loads(data)),
            meta_bytes=canonical(m),
            effective_at=eff,
            recorded_at=rec,  # hash version 2 (the ledger was made after migration 0024)
        )
        su.execute(
            "UPDATE events SET meta = %s::jsonb, prev_hash = %s, hash = %s WHERE position = %s",
            (orjson.dumps(m).decode(), prev, h, pos),
        )
        prev = h
    return rows


def _restore(su: psycopg.Connection, rows: list[tuple]) -> None:
    for pos, *_rest, meta, _eff, prev_hash, h, _rec in rows:
        su.execute(
            "UPDATE events SET meta = %s::jsonb, prev_hash = %s, hash = %s WHERE position = %s",
            (meta, prev_hash, h, pos),
        )


@pytest.mark.timeout(240)
def test_checkpoint_pins_the_log_against_rewrites(database, db_url, server_url, tmp_path):
    key = tmp_path / "checkpoint.key"
    pods = [(f"p{i}", "500m") for i in range(6)]
    _inputs(database, pods)
    cp1 = tmp_path / "cp1.note"
    rc, out = _cli(db_url, "checkpoint", "--new-key", "-o", str(cp1), key=key)
    assert rc == 0, out
    n1 = event_count(database)
    note = cp1.read_text()
    assert note.split("\n")[1] == str(n1) and "\n\n\u2014 podledger " in note, note
    rc, vkey = _cli(db_url, "checkpoint", "--verifier-key", key=key)
    vkey = vkey.strip()
    assert rc == 0 and vkey.startswith("podledger+"), vkey

    rc, out = _cli(db_url, "verify", "--checkpoint", str(cp1), "--public-key", vkey)
    assert rc == 0 and "ok: the log" in out, out

    # Ledger 2: the same inputs but one pod asks for 400m, and one more pod; its chain is valid.
    url2 = new_database(server_url)
    try:
        database2 = db.get_database(url2, migrate_on_start=False)
        _inputs(database2, [*pods[:3], ("p3", "400m"), *pods[4:], ("p6", "100m")])
        assert event_count(database2) > n1
        rc, out = _cli(url2, "verify")
        assert rc == 0 and "hash chain intact" in out, out
        rc, out = _cli(url2, "verify", "--checkpoint", str(cp1), "--public-key", vkey)
        assert rc == 1 and "not an extension of the checkpoint" in out, out
    finally:
        db.dispose(url2)
        with psycopg.connect(_admin(server_url), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{db.database_name(url2)}" WITH (FORCE)')

    # Ledger 1 grows and keeps passing; a second checkpoint covers the new events.
    apply_text(database, "---\n".join(pod_yaml(f"q{i}") for i in range(3)))
    assert event_count(database) > n1
    rc, out = _cli(db_url, "verify", "--checkpoint", str(cp1), "--key", str(key))
    assert rc == 0 and f"extends the checkpoint of {n1} events" in out, out
    cp2 = tmp_path / "cp2.note"
    rc, out = _cli(db_url, "checkpoint", "-o", str(cp2), key=key)
    assert rc == 0, out

    # A superuser rewrite of any event the checkpoint covers, every later hash recomputed: plain
    # `verify` is fooled (that is the point), `verify --checkpoint` is not, and names the event.
    with psycopg.connect(db_url) as c:
        positions = [r[0] for r in c.execute("SELECT position FROM events ORDER BY position").fetchall()]
    covered = positions[:n1]
    with _superuser(db_url) as su:
        for pos in (covered[0], covered[len(covered) // 2], covered[-1]):
            original = _rewrite(su, pos)
            rc, out = _cli(db_url, "verify")
            assert rc == 0 and "hash chain intact" in out, out
            for cp in (cp1, cp2):
                rc, out = _cli(db_url, "verify", "--checkpoint", str(cp), "--public-key", vkey)
                assert rc == 1 and f"FAILED at position {pos}:" in out, (pos, out)
            _restore(su, original)
        rc, out = _cli(db_url, "verify", "--checkpoint", str(cp1), "--public-key", vkey)
        assert rc == 0, out
        # An event after the checkpoint may change without failing *that* checkpoint, but the
        # newer one covering it fails.
        after = positions[n1]
        _rewrite(su, after)
        rc, out = _cli(db_url, "verify", "--checkpoint", str(cp1), "--public-key", vkey)
        assert rc == 0, out
        rc, out = _cli(db_url, "verify", "--checkpoint", str(cp2), "--public-key", vkey)
        assert rc == 1 and f"FAILED at position {after}:" in out, out
        # The forger also wipes the stored tree: the verdict never relied on it.
        su.execute("DELETE FROM merkle_nodes")
        su.execute("DELETE FROM merkle_leaves")
        rc, out = _cli(db_url, "verify", "--checkpoint", str(cp2), "--public-key", vkey)
        assert rc == 1 and "not an extension" in out, out
        # A forged checkpoint (size changed by hand) is refused by its signature.
        forged = tmp_path / "forged.note"
        forged.write_text(cp1.read_text().replace(f"\n{n1}\n", f"\n{n1 - 1}\n", 1))
        rc, out = _cli(db_url, "verify", "--checkpoint", str(forged), "--public-key", vkey)
        assert rc == 1 and "signature" in out, out


@pytest.mark.timeout(120)
def test_inclusion_proof_verifies_with_the_public_key_alone(database, db_url, tmp_path):
    key = tmp_path / "checkpoint.key"
    _inputs(database, [(f"p{i}", "100m") for i in range(4)])
    rc, out = _cli(db_url, "checkpoint", "--new-key", key=key)
    assert rc == 0, out
    _, vkey = _cli(db_url, "checkpoint", "--verifier-key", key=key)
    vkey = vkey.strip()
    with psycopg.connect(db_url) as c:
        positions = [r[0] for r in c.execute("SELECT position FROM events ORDER BY position").fetchall()]
    for pos in (positions[0], positions[len(positions) // 2], positions[-1]):
        rc, out = _cli(db_url, "prove", str(pos), key=key)
        assert rc == 0, out
        proof = json.loads(out)
        cp = verify_event_proof(proof, vkey)
        assert cp.size == len(positions) and proof["position"] == pos
        # The same proof with the event's content changed, or for another key, is rejected.
        bad = json.loads(out)
        bad["event"]["meta"]["actor"] = "someone-else"
        with pytest.raises(TransparencyError, match="do not hash"):
            verify_event_proof(bad, vkey)
        moved = json.loads(out)
        moved["leaf_index"] = (proof["leaf_index"] + 1) % len(positions)
        with pytest.raises(TransparencyError, match="not leaf"):
            verify_event_proof(moved, vkey)
    # The command-line form of the verifier (no database, no podledger config).
    path = tmp_path / "proof.json"
    path.write_text(out)
    p = subprocess.run(
        [sys.executable, "-m", "ledger.transparency", str(path), vkey],
        cwd=ROOT,
        env={"PATH": os.environ.get("PATH", "")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0 and p.stdout.startswith("ok: position"), p.stdout + p.stderr
    rc, out = _cli(db_url, "prove", "999999", key=key)
    assert rc == 1 and "position 999999: no event at this position" in out, out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.timeout(120)
def test_server_and_worker_sessions_are_not_superuser(database, db_url, procs, tmp_path):
    from .conftest import log_count, start_worker

    key = tmp_path / "checkpoint.key"
    rc, out = _cli(db_url, "checkpoint", "--new-key", key=key)
    assert rc == 0, out
    _, vkey = _cli(db_url, "checkpoint", "--verifier-key", key=key)
    port = _free_port()
    token = "r" * 24
    env = dict(
        os.environ,
        PODLEDGER_DATABASE_URL=db_url,
        PODLEDGER_TOKENS=f"reader={token}",
        PODLEDGER_CHECKPOINT_KEY=str(key),
        PGAPPNAME="podledger-api-test",
    )
    procs.start(
        [PODLEDGER, "serve", "--port", str(port), "--log-level", "warning"], tmp_path / "api.log", env
    )
    wlog = tmp_path / "w.log"
    worker_env = {
        "PGAPPNAME": "podledger-worker-test",
        "PODLEDGER_CHECKPOINT_KEY": str(key),
        "PODLEDGER_CHECKPOINT_INTERVAL": "0.5",
    }
    start_worker(procs, "w", wlog, db_url, env=worker_env)
    wait_until(lambda: log_count(wlog, "leader") >= 1, 30, "the worker to lead")
    apply_text(database, nodes_yaml(1) + "---\n" + pod_yaml("p0"))

    def get() -> httpx.Response | None:
        try:
            return httpx.get(
                f"http://127.0.0.1:{port}/podledger/v1/checkpoint",
                headers={"Authorization": f"Bearer {token}"},
                timeout=10,
            )
        except httpx.TransportError:
            return None

    r = wait_until(get, 30, "the API server")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain"), r.text
    from ledger.transparency import Verifier, open_checkpoint

    cp = open_checkpoint(r.text, Verifier.parse(vkey.strip()))
    assert cp.size >= 3
    # The worker signs on its schedule too, once the log has grown past the last checkpoint.
    apply_text(database, pod_yaml("p1"))
    n = event_count(database)

    def signed_sizes() -> list[int]:
        with psycopg.connect(db_url) as c:
            notes = [r[0] for r in c.execute("SELECT note FROM checkpoints ORDER BY id").fetchall()]
        return [open_checkpoint(x, Verifier.parse(vkey.strip())).size for x in notes]

    wait_until(lambda: max(signed_sizes()) >= n, 30, "the worker's scheduled checkpoint")
    assert log_count(wlog, "checkpoint") >= 1 and log_count(wlog, "checkpoint-error") == 0
    with psycopg.connect(db_url, autocommit=True) as su:
        sessions = su.execute(
            "SELECT a.application_name, a.usename, r.rolsuper FROM pg_stat_activity a "
            "JOIN pg_roles r ON r.oid = a.usesysid "
            "WHERE a.datname = current_database() AND a.application_name LIKE 'podledger-%%-test'"
        ).fetchall()
    names = {s[0] for s in sessions}
    assert names == {"podledger-api-test", "podledger-worker-test"}, sessions
    assert all(user == "podledger_app" and not su_ for _, user, su_ in sessions), sessions
    # The application login cannot rewrite the log, even by leaving its role.
    with psycopg.connect(db.app_url(db_url), autocommit=True) as app:
        for sql in (
            "RESET ROLE; UPDATE events SET meta = '{}'",
            "TRUNCATE events",
            "ALTER TABLE events DISABLE TRIGGER ALL",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                app.execute(sql)
    rc, out = _cli(db_url, "db", "roles")
    assert rc == 0 and "podledger_app" in out and "SELECT, INSERT" in out, out


@pytest.mark.timeout(120)
def test_migrations_run_as_a_non_superuser_owner(server_url):
    """As in docker-compose: the owner login (no superuser) runs every migration and owns the
    tables; the application login then appends, and cannot leave its privileges."""
    owner = f"podledger_owner_t{os.getpid()}"
    name = f"podledger_t{os.getpid()}_owner"
    with psycopg.connect(_admin(server_url), autocommit=True) as su:
        su.execute(f"CREATE ROLE {owner} LOGIN CREATEROLE NOSUPERUSER")
        su.execute(f'CREATE DATABASE "{name}" OWNER {owner}')
    url = db.with_login(db.with_database(db.libpq_url(server_url), name), owner, None)
    try:
        db.migrate(url)
        database = db.get_database(url, migrate_on_start=False)
        apply_text(database, nodes_yaml(1) + "---\n" + pod_yaml("p0"))
        with psycopg.connect(url) as c:
            owners = c.execute(
                "SELECT DISTINCT pg_get_userbyid(relowner) FROM pg_class "
                "WHERE relname IN ('events', 'streams', 'objects', 'merkle_leaves', 'checkpoints')"
            ).fetchall()
            sessions = c.execute(
                "SELECT DISTINCT a.usename, r.rolsuper FROM pg_stat_activity a JOIN pg_roles r "
                "ON r.oid = a.usesysid WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()"
            ).fetchall()
        assert owners == [(owner,)]
        assert sessions == [("podledger_app", False)], sessions
        assert event_count(database) == 2
    finally:
        db.dispose(url)
        with psycopg.connect(_admin(server_url), autocommit=True) as su:
            su.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            su.execute(f"DROP ROLE IF EXISTS {owner}")
