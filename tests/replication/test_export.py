"""``podledger export``: the log through a logical slot on the ``podledger_events`` publication,
restarted mid-stream (also in the middle of a transaction) without a gap or a duplicate, and its
Merkle root matching the signed checkpoints."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from ledger import anchor, db, logstream
from ledger.store import NewEvent
from ledger.uow import write
from tests.reliability.conftest import wait_until

PODLEDGER = str(Path(sys.executable).parent / "podledger")


def _notes(prefix: str, n: int) -> list[NewEvent]:
    return [
        NewEvent("export/notes", "NoteRecorded", {"text": f"{prefix}-{i}"}, {"actor": "test"}, uuid.uuid4())
        for i in range(n)
    ]


def _export(url: str, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(
        [PODLEDGER, "export", "--out", str(out), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, PODLEDGER_DATABASE_URL=url),
    )
    assert res.returncode == 0, res.stdout + res.stderr
    return res


@pytest.mark.timeout(120)
def test_export_resumes_exactly_once_and_matches_the_checkpoints(ledger_url, tmp_path):
    database = db.get_database(ledger_url)
    signer = anchor.create_key(tmp_path / "checkpoint.key")
    out = tmp_path / "events.jsonl"
    write(database, _notes("before-slot", 3))
    _export(ledger_url, out)  # creates the slot, copies what was there before it
    for prefix, n in (("tx1", 3), ("tx2", 4), ("tx3", 3)):
        write(database, _notes(prefix, n))  # one transaction each
    first = anchor.make_checkpoint(database, signer).note
    # stopped mid-stream, in the middle of tx2: the slot stays at tx1's commit
    _export(ledger_url, out, "--max-events", "5")
    assert [x["data"]["text"] for x in logstream.read_lines(out)][-5:] == [
        "tx1-0", "tx1-1", "tx1-2", "tx2-0", "tx2-1",
    ]  # fmt: skip
    # restarted: tx2 is delivered again, its first two events are not written twice
    write(database, _notes("tx4", 2))
    _export(ledger_url, out)

    # --follow until SIGTERM, with writes while it runs
    follower = subprocess.Popen(
        [PODLEDGER, "export", "--out", str(out), "--follow", "--poll", "0.05"],
        env=dict(os.environ, PODLEDGER_DATABASE_URL=ledger_url),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        write(database, _notes("tx5", 3))
        with database.connect() as conn:
            head = int(conn.execute("SELECT max(position) FROM events").fetchone()[0])
        wait_until(
            lambda: (logstream.read_lines(out) or [{"position": 0}])[-1]["position"] == head,
            30,
            "the follower",
        )
        follower.send_signal(signal.SIGTERM)
        assert follower.wait(30) == 0, follower.stderr.read() if follower.stderr else ""
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait(10)

    lines = logstream.read_lines(out)
    with database.connect() as conn:
        stored = conn.execute(
            "SELECT position, event_id::text, hash FROM events ORDER BY position"
        ).fetchall()
    # every event exactly once, in position order, with its hash
    assert [(x["position"], x["event_id"], x["hash"]) for x in lines] == [
        (p, e, bytes(h).hex()) for p, e, h in stored
    ]
    # the chain links line to line
    assert all(b["prev_hash"] == a["hash"] for a, b in zip(lines, lines[1:], strict=False))
    # the consumer recomputes the Merkle root: the checkpoints signed by the ledger match it
    cp = logstream.check_checkpoint(lines, first, signer.verifier)
    assert 0 < cp.size < len(lines)
    last = anchor.make_checkpoint(database, signer).note
    assert logstream.check_checkpoint(lines, last, signer.verifier).size == len(lines)
    # a line changed in the export no longer matches
    forged = [dict(x) for x in lines]
    forged[1]["hash"] = "00" * 32
    with pytest.raises(logstream.StreamError, match="root"):
        logstream.check_checkpoint(forged, first, signer.verifier)
    _export(ledger_url, out, "--drop-slot")


@pytest.mark.long  # the slot's synchronisation to the standby takes 10-60 s (make test-long)
@pytest.mark.timeout(120)
def test_export_slot_survives_failover(cluster, ledger_url, tmp_path):
    """PostgreSQL 17+ failover slots: the exporter's slot is synchronised to the standby
    (``pg_sync_replication_slots``), and after the promotion the export continues from it on
    the new primary, without a gap or a duplicate.

    The standby keeps a synchronised slot only once the primary's slot has moved past what the
    standby can guarantee (its catalog xmin): the exporter keeps consuming until it has."""
    database = db.get_database(ledger_url)
    out = tmp_path / "events.jsonl"
    write(database, _notes("a", 3))
    _export(ledger_url, out)  # creates the slot (a failover slot)
    rounds = 0

    def synced() -> bool:
        nonlocal rounds
        with cluster.standby.connect() as c:
            c.execute("SELECT pg_sync_replication_slots()")
            row = c.execute(
                "SELECT synced AND NOT temporary FROM pg_replication_slots WHERE slot_name = 'podledger_export'"
            ).fetchone()
        if row and row[0]:
            return True
        rounds += 1
        write(database, _notes(f"b{rounds}", 1))  # the exporter goes on: its slot moves
        _export(ledger_url, out)
        return False

    cluster.wait(synced, 60, "the export slot to be synchronised to the standby")
    # a follower runs across the failover: it reconnects to the promoted server and goes on
    # from the synchronised slot (behind what it wrote: those events are skipped)
    follower = subprocess.Popen(
        [PODLEDGER, "export", "--out", str(out), "--follow", "--poll", "0.05"],
        env=dict(os.environ, PODLEDGER_DATABASE_URL=ledger_url),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        write(database, _notes("c", 3))
        cluster.fail_over()
        write(database, _notes("d", 2))  # on the promoted server
        with database.connect() as conn:
            head = int(conn.execute("SELECT max(position) FROM events").fetchone()[0])
        wait_until(
            lambda: (logstream.read_lines(out) or [{"position": 0}])[-1]["position"] == head,
            30,
            "the follower to export the promoted server's events",
        )
        follower.send_signal(signal.SIGTERM)
        assert follower.wait(30) == 0, follower.stderr.read() if follower.stderr else ""
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait(10)
    lines = logstream.read_lines(out)
    with database.connect() as conn:
        stored = conn.execute("SELECT position, event_id::text FROM events ORDER BY position").fetchall()
    assert [(x["position"], x["event_id"]) for x in lines] == [(p, e) for p, e in stored]
    assert [x["data"]["text"] for x in lines][-5:] == ["c-0", "c-1", "c-2", "d-0", "d-1"]
