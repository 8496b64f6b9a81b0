"""Hash version 2 (migration 0024) covers recorded_at; the events of a log made before it keep
the hash they were made with (version 1) and are verified under that rule, also in proofs."""

from __future__ import annotations

import json

import orjson
import psycopg

from alembic import command
from ledger import anchor, db
from ledger import transparency as tl
from ledger.store import NewEvent
from ledger.verify import verify_chain
from tests.ledger_helpers import append_events

from . import independent_verifier as outside


def _note(stream: str) -> NewEvent:
    return NewEvent(stream, "NoteRecorded", {"text": stream})


def _segments(db_url: str) -> list[tuple[int, int]]:
    with psycopg.connect(db.libpq_url(db_url)) as c:
        return c.execute("SELECT first_position, version FROM event_hash_versions ORDER BY id").fetchall()


def test_events_before_the_migration_keep_hash_version_1(database, db_url):
    cfg = db.alembic_config(db_url)
    assert _segments(db_url) == [(1, 2)]  # a ledger made after 0024: version 2 from the start
    db.dispose_all()
    command.downgrade(cfg, "0023")  # the code of 0023 appends: its single-append function hashes v1
    database = db.get_database(db_url, migrate_on_start=False)  # a new pool (the old one is closed)
    for i in range(3):
        append_events(database, [_note(f"old/{i}")])
    db.dispose_all()
    command.upgrade(cfg, "head")
    database = db.get_database(db_url, migrate_on_start=False)
    append_events(database, [_note(f"new/{i}") for i in range(70)])  # COPY
    append_events(database, [_note("new/a"), _note("new/b")])  # INSERT
    append_events(database, [_note("new/c")])  # one server call
    assert _segments(db_url) == [(1, 2), (1, 1), (4, 2)]
    assert verify_chain(database).ok

    signer = tl.Signer.generate("podledger")
    signed = anchor.make_checkpoint(database, signer)
    assert signed.checkpoint.size == 76
    assert anchor.verify_against_checkpoint(database, signed.note, signer.verifier).ok
    for position, version in ((2, 1), (3, 1), (4, 2), (76, 2)):
        proof = anchor.prove(database, position, signer.verifier)
        assert proof["hash_version"] == version and ("recorded_at" in proof["event"]) == (version == 2)
        tl.verify_event_proof(proof, signer.verifier.text())
        outside.verify_proof(json.loads(orjson.dumps(proof)), signer.verifier.text())

    # recorded_at is inside the hash from version 2 on only: a superuser's change of it is found
    # in a version-2 event, not in a version-1 event (its hash never covered it)
    with psycopg.connect(db.libpq_url(db_url), autocommit=True) as su:
        su.execute("SET session_replication_role = replica")
        su.execute("UPDATE events SET recorded_at = recorded_at - interval '1 day' WHERE position = 2")
        assert verify_chain(database).ok
        su.execute("UPDATE events SET recorded_at = recorded_at - interval '1 day' WHERE position = 5")
    res = verify_chain(database)
    assert not res.ok and res.first_bad_position == 5
