"""Issue 37: the attacks on the anchored history replayed as the application login, and a
superuser's change of ``recorded_at``.

Before migration 0024 the application login could INSERT into ``checkpoints`` and the Merkle
tables: one junk row made ``podledger checkpoint``, ``GET /podledger/v1/checkpoint`` and
``POST /podledger/v1/admin/checkpoint`` return a junk note (matched by columns, its signature
never checked), and a row with ``tree_size = 10^9`` broke ``prove``. ``recorded_at`` was outside
the hash. Now the tables are written only through functions that check what they store, a
stored note is served or proved against only when its signature verifies, and the event hash
covers ``recorded_at``.
"""

from __future__ import annotations

import base64
import os
from datetime import timedelta
from pathlib import Path

import orjson
import psycopg
import pytest
from fastapi.testclient import TestClient

from api.http.app import create_app
from ledger import anchor
from ledger import transparency as tl
from ledger.canonical import canonical, event_hash
from ledger.verify import verify_chain

from ._forge import app_conn, cli, head, su_conn
from .conftest import apply_text, event_count, nodes_yaml, pod_yaml

TOKENS = "reader=reader-token-0123456789,admin=admin-token-0123456789"


def _bearer(role: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {role}-token-0123456789"}


def _signed(db_url: str, key: Path, tmp_path: Path) -> tuple[str, tl.Verifier]:
    """A checkpoint signed by ``podledger checkpoint`` (a new key) and the verifier key."""
    out = tmp_path / "cp.note"
    rc, text = cli(
        db_url, "checkpoint", "--new-key", "-o", str(out), env={"PODLEDGER_CHECKPOINT_KEY": str(key)}
    )
    assert rc == 0, text
    return out.read_text(), anchor.load_signer(key).verifier


def _note(origin: str, size: int, root: bytes, sig_lines: str) -> str:
    return f"{origin}\n{size}\n{base64.b64encode(root).decode()}\n\n{sig_lines}"


def _junk_signature(name: str = "podledger") -> str:
    return f"\u2014 {name} {base64.b64encode(os.urandom(68)).decode()}\n"


def test_tree_and_checkpoints_are_written_only_through_checking_functions(database, db_url, tmp_path):
    apply_text(database, nodes_yaml(2) + "---\n" + pod_yaml("p0"))
    key = tmp_path / "checkpoint.key"
    note, verifier = _signed(db_url, key, tmp_path)
    n = event_count(database)
    with app_conn(db_url) as app:
        root = bytes(app.execute("SELECT ledger_tree_root(%s)", (n,)).fetchone()[0])
        assert tl.open_checkpoint(note, verifier).root == root
        for sql in (
            "INSERT INTO checkpoints (origin, tree_size, root, key_name, note) "
            "VALUES ('podledger', 1000000000, sha256(''), 'podledger', 'junk')",
            "INSERT INTO merkle_leaves VALUES (1000, 1000, sha256(''))",
            "INSERT INTO merkle_nodes VALUES (1, 1000, sha256(''))",
            "DELETE FROM checkpoints",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                app.execute(sql)

        def store(origin: str, size: int, r: bytes, name: str, text: str) -> None:
            app.execute("SELECT ledger_store_checkpoint(%s, %s, %s, %s, %s)", (origin, size, r, name, text))

        sig = _junk_signature()
        refused = [
            (("podledger", 10**9, root, "podledger", _note("podledger", 10**9, root, sig)), "tree size"),
            (("podledger", -1, root, "podledger", _note("podledger", -1, root, sig)), "tree size"),
            (
                ("podledger", n, b"\x07" * 32, "podledger", _note("podledger", n, b"\x07" * 32, sig)),
                "root is not",
            ),
            (("podledger", n - 1, root, "podledger", _note("podledger", n - 1, root, sig)), "root is not"),
            (("podledger", n, root, "podledger", _note("podledger", n + 1, root, sig)), "body"),
            (("podledger", n, root, "podledger", "junk"), "body"),
            (("podledger", n, root, "podledger", _note("podledger", n, root, "")), "no signature lines"),
            (
                ("podledger", n, root, "podledger", _note("podledger", n, root, "signed, trust me\n")),
                "malformed",
            ),
            (
                ("podledger", n, root, "podledger", _note("podledger", n, root, _junk_signature("other"))),
                "by key",
            ),
            (("pod\nledger", n, root, "podledger", _note("pod\nledger", n, root, sig)), "origin"),
            (("podledger", n, root, "pod ledger", _note("podledger", n, root, sig)), "key name"),
            (("podledger", n, root, "podledger", _note("podledger", n, root, sig * 120)), "8 KiB"),
        ]
        for args, reason in refused:
            with pytest.raises(psycopg.errors.CheckViolation, match=reason):
                store(*args)
        # a note for this log's real head with a forged signature: the function cannot check
        # Ed25519, so it is stored (newest) -- and ignored by everything that serves notes
        store("podledger", n, root, "podledger", _note("podledger", n, root, sig))
        # the tree function computes what it stores: leaves of the stored events only
        apply_text(database, pod_yaml("p1"))
        m = event_count(database)
        with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState, match="the caller checked"):
            app.execute("SELECT ledger_extend_tree(%s, %s)", (head(app)[0], 99))
        assert app.execute("SELECT ledger_extend_tree(%s, NULL)", (head(app)[0],)).fetchone() == (m,)
        for idx, pos, leaf in app.execute("SELECT idx, position, hash FROM merkle_leaves ORDER BY idx"):
            h = app.execute("SELECT hash FROM events WHERE position = %s", (pos,)).fetchone()[0]
            assert bytes(leaf) == tl.leaf_hash(tl.event_entry(pos, bytes(h))), idx
    with su_conn(db_url) as su:  # junk only a superuser can store now (or the app could before 0024)
        su.execute(
            "INSERT INTO checkpoints (origin, tree_size, root, key_name, note) VALUES "
            "('podledger', 1000000000, sha256(''), 'podledger', 'junk'), "
            "('podledger', %s, %s, 'podledger', %s)",
            (n, root, _note("podledger", n, root, sig)),
        )
    env = {"PODLEDGER_CHECKPOINT_KEY": str(key)}
    # signing: the newest stored note of this head is junk; a verified one is printed
    rc, out = cli(db_url, "checkpoint", env=env)
    assert rc == 0, out
    assert tl.open_checkpoint(out, verifier).size == m
    again = cli(db_url, "checkpoint", env=env)[1]  # unchanged log: the stored note, verified
    assert again == out
    # proving: junk rows (10^9 leaves, forged signatures) are never proved against
    for pos in (1, m):
        rc, text = cli(db_url, "prove", str(pos), env=env)
        assert rc == 0, text
        assert tl.verify_event_proof(orjson.loads(text), verifier.text()).size == m
    rc, text = cli(db_url, "prove", "1", "--checkpoint", str(tmp_path / "cp.note"), env=env)
    assert rc == 0 and tl.verify_event_proof(orjson.loads(text), verifier.text()).size == n, text
    forged = tmp_path / "forged.note"
    forged.write_text(_note("podledger", n, root, sig))
    rc, text = cli(db_url, "prove", "1", "--checkpoint", str(forged), env=env)
    assert rc == 1 and "checkpoint rejected" in text, text
    rc, text = cli(db_url, "prove", "1", env={"PODLEDGER_CHECKPOINT_KEY": str(tmp_path / "absent")})
    assert rc == 1 and "no key to check the stored checkpoints" in text, text
    assert anchor.latest_note(database, verifier) == out


def test_the_api_serves_only_notes_that_verify(database, db_url, tmp_path, monkeypatch):
    apply_text(database, nodes_yaml(1))
    key = tmp_path / "checkpoint.key"
    note, verifier = _signed(db_url, key, tmp_path)
    n = event_count(database)
    with app_conn(db_url) as app:
        root = bytes(app.execute("SELECT ledger_tree_root(%s)", (n,)).fetchone()[0])
        app.execute(
            "SELECT ledger_store_checkpoint('podledger', %s, %s, 'podledger', %s)",
            (n, root, _note("podledger", n, root, _junk_signature())),
        )
    monkeypatch.setenv("PODLEDGER_CHECKPOINT_KEY", str(tmp_path / "absent"))  # this server cannot sign
    monkeypatch.delenv("PODLEDGER_CHECKPOINT_VERIFIER_KEY", raising=False)
    with TestClient(create_app(database, TOKENS), raise_server_exceptions=False) as client:
        r = client.get("/podledger/v1/checkpoint", headers=_bearer("reader"))
        assert r.status_code == 409 and "no verifier key" in r.text, r.text
        monkeypatch.setenv("PODLEDGER_CHECKPOINT_VERIFIER_KEY", verifier.text())
        r = client.get("/podledger/v1/checkpoint", headers=_bearer("reader"))
        assert r.status_code == 200 and r.text == note, r.text
        r = client.post("/podledger/v1/admin/checkpoint", headers=_bearer("admin"))
        assert r.status_code == 409, r.text  # no signing key here
        monkeypatch.setenv("PODLEDGER_CHECKPOINT_KEY", str(key))
        apply_text(database, pod_yaml("p0"))
        r = client.post("/podledger/v1/admin/checkpoint", headers=_bearer("admin"))
        assert r.status_code == 200, r.text
        assert tl.open_checkpoint(r.json()["checkpoint"], verifier).size == event_count(database)
        r = client.get("/podledger/v1/checkpoint", headers=_bearer("reader"))
        assert r.status_code == 200 and tl.open_checkpoint(r.text, verifier).size == event_count(database)
        other = tl.Signer.generate("podledger").verifier  # the same key name, another key
        monkeypatch.setenv("PODLEDGER_CHECKPOINT_KEY", str(tmp_path / "absent"))
        monkeypatch.setenv("PODLEDGER_CHECKPOINT_VERIFIER_KEY", other.text())
        r = client.get("/podledger/v1/checkpoint", headers=_bearer("reader"))
        assert r.status_code == 404 and "no checkpoint signed" in r.text, r.text


def _rehash_from(su: psycopg.Connection, position: int) -> None:
    """Recompute the hash of every event from ``position`` on, as a forger with superuser rights
    who changed that event would (hash version 2: the ledger was made after migration 0024)."""
    rows = su.execute(
        "SELECT position, stream, version, type, schema_version, event_id, data::text, meta::text, "
        "effective_at, recorded_at, prev_hash FROM events WHERE position >= %s ORDER BY position",
        (position,),
    ).fetchall()
    prev = bytes(rows[0][10])
    for pos, stream, version, typ, sv, eid, data, meta, eff, rec, _prev in rows:
        h = event_hash(
            prev,
            stream=stream,
            version=version,
            type=typ,
            schema_version=sv,
            event_id=eid,
            data_bytes=canonical(orjson.loads(data)),
            meta_bytes=canonical(orjson.loads(meta)),
            effective_at=eff,
            recorded_at=rec,
        )
        su.execute("UPDATE events SET prev_hash = %s, hash = %s WHERE position = %s", (prev, h, pos))
        prev = h


def test_verify_finds_a_superuser_change_of_recorded_at(database, db_url, tmp_path):
    apply_text(database, nodes_yaml(2) + "---\n" + pod_yaml("p0") + "---\n" + pod_yaml("p1"))
    key = tmp_path / "checkpoint.key"
    _signed(db_url, key, tmp_path)
    vkey = anchor.load_signer(key).verifier.text()
    cp = str(tmp_path / "cp.note")
    moved = 2
    with su_conn(db_url) as su:
        su.execute("SET session_replication_role = replica")  # the triggers are off
        su.execute(
            "UPDATE events SET recorded_at = recorded_at - interval '3 days' WHERE position = %s", (moved,)
        )
        res = verify_chain(database)  # the stored hash no longer matches: plain verify finds it
        assert not res.ok and res.first_bad_position == moved and "modified" in res.reason
        _rehash_from(su, moved)  # every hash recomputed: the chain alone is fooled
        assert verify_chain(database).ok
    rc, out = cli(db_url, "verify", "--checkpoint", cp, "--public-key", vkey)
    assert rc == 1 and f"FAILED at position {moved}:" in out, out
    with su_conn(db_url) as su:  # the log as the API shows it: the moved time is what it serves
        shown = su.execute("SELECT recorded_at FROM events WHERE position = %s", (moved,)).fetchone()[0]
        before = su.execute("SELECT recorded_at FROM events WHERE position = %s", (moved + 1,)).fetchone()[0]
    assert before - shown > timedelta(days=2)
