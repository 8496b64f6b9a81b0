"""Migration 0019: the functions that read the chain head run with sequential scans disabled,
so the head read stays an index probe whatever statistics its session's cached plan was made
with (a plan made on an empty log used to scan the whole log on every append)."""

from __future__ import annotations

import psycopg

from ledger import db

FUNCTIONS = ("ledger_append_one", "ledger_begin_batch", "ledger_notify_append")
HEAD = "SELECT e.hash FROM events e ORDER BY e.position DESC LIMIT 1"


def test_head_reading_functions_disable_seqscan(db_url):
    with psycopg.connect(db.libpq_url(db_url)) as conn:
        rows = conn.execute(
            "SELECT proname, proconfig FROM pg_proc WHERE proname = ANY(%s)", (list(FUNCTIONS),)
        ).fetchall()
        assert sorted(name for name, _ in rows) == sorted(FUNCTIONS)
        for name, config in rows:
            assert "enable_seqscan=off" in (config or []), name

        # the fixture's log is empty and analysed as such: the plan the functions get is still
        # the backward index scan (no sort of every row)
        conn.execute("ANALYZE events")
        conn.execute("SET LOCAL enable_seqscan = off")
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + HEAD))
        assert "Index Scan Backward" in plan and "Seq Scan" not in plan, plan
        assert "->  Sort" not in plan, plan
