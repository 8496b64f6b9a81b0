"""Failover with nothing acknowledged lost (synchronous replication), and what asynchronous
replication loses, flagged by a signed checkpoint the promoted log does not extend."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from ledger import anchor, db
from ledger.store import NewEvent
from ledger.uow import write
from tests.reliability.conftest import apply_text, dump_on_failure, nodes_yaml, procs  # noqa: F401
from tests.replication.cluster import Cluster
from tests.replication.failover import Load, check, fail_over

PODLEDGER = str(Path(sys.executable).parent / "podledger")


@pytest.mark.timeout(150)
def test_failover_under_load_loses_no_acknowledged_event(cluster, ledger_url, procs, tmp_path):  # noqa: F811
    signer = anchor.create_key(tmp_path / "checkpoint.key")
    database = db.get_database(ledger_url)
    apply_text(database, nodes_yaml(4, "64"))  # room for 440 pods
    load = Load(procs, ledger_url, tmp_path)
    load.start()
    with dump_on_failure(*load.logs(), cluster.primary.log, cluster.standby.log):
        before = anchor.make_checkpoint(database, signer).note
        r = fail_over(cluster, load, database)
        # writes and scheduling resume within 10 s of the promotion; the worker leads again
        assert r.write_resume_s <= 10, r
        assert r.schedule_resume_s <= 10, r
        assert r.http_resume_s is not None and r.http_resume_s <= 10, r  # both HTTP APIs
        after = anchor.make_checkpoint(database, signer).note  # the new primary signs on
        load.stop(database)
        result = check(database, load, [before, after], signer.verifier)
    assert result["acked_pods"] >= 5 and result["acked_events"] >= 5, result


def _note(text: str) -> NewEvent:
    return NewEvent("load/notes", "NoteRecorded", {"text": text}, {"actor": "test"}, uuid.uuid4())


@pytest.mark.timeout(120)
def test_async_failover_loses_acknowledged_events_and_the_checkpoint_says_so(tmp_path, monkeypatch):
    key = tmp_path / "checkpoint.key"
    signer = anchor.create_key(key)
    with Cluster(sync=False) as cluster:
        url = cluster.url("podledger")
        monkeypatch.setenv("PODLEDGER_DATABASE_URL", url)
        database = db.get_database(url)
        try:
            kept = [write(database, [_note(f"kept-{i}")])[0].event_id for i in range(5)]
            cluster.wait(lambda: cluster.replay_lag_bytes() == 0, 30, "the standby to catch up")
            # the standby stops receiving WAL (a network partition); the primary goes on
            # acknowledging commits, as asynchronous replication does
            with cluster.standby.connect() as c:
                c.execute("ALTER SYSTEM SET primary_conninfo = ''")
                c.execute("SELECT pg_reload_conf()")
            cluster.wait(lambda: cluster.replay_lag_bytes() == -1, 30, "the standby to disconnect")
            lost = [write(database, [_note(f"lost-{i}")])[0].event_id for i in range(5)]
            note = anchor.make_checkpoint(database, signer).note  # signed on the old primary
            (tmp_path / "cp.txt").write_text(note)
            cluster.fail_over()
            # the promoted log has the events replicated before the partition, not the others
            with database.connect() as conn:
                present = {r[0] for r in conn.execute("SELECT event_id FROM events").fetchall()}
            assert set(kept) <= present
            assert not set(lost) & present
            # writes go on, and the log grows past the checkpoint's size: still not its extension
            for i in range(10):
                write(database, [_note(f"after-{i}")])
            res = subprocess.run(
                [PODLEDGER, "verify", "--checkpoint", str(tmp_path / "cp.txt"), "--key", str(key)],
                capture_output=True,
                text=True,
                timeout=60,
                env=dict(__import__("os").environ, PODLEDGER_DATABASE_URL=url),
            )
            assert res.returncode == 1, res.stdout + res.stderr
            assert "not an extension of the checkpoint" in res.stdout + res.stderr, res.stdout + res.stderr
        finally:
            db.dispose_all()
