"""Lean replay rows decode to exactly what ``read_all`` returns, page by page."""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg
import pytest

from ledger import events, replay_rows, store
from ledger.store import NewEvent


def test_rows_match_stored_events_and_page(conn, db_url):
    eff = datetime(1999, 12, 31, 23, 0, 0, 1, tzinfo=UTC)
    evs = [
        NewEvent(f"r/{i % 5}", "NoteRecorded", {"text": f"ü{i}", "attributes": {"i": i}}, meta={"m": i})
        for i in range(150)
    ]
    evs.append(NewEvent("r/x", "NoteRecorded", {"text": "old"}, effective_at=eff))
    store.append(conn, evs)
    want = store.read_all(conn, limit=1000)
    with replay_rows.connect(db_url) as raw:
        got = list(replay_rows.iter_rows(raw, page=40))
        assert [
            (
                r.position,
                r.stream,
                r.version,
                r.type,
                r.schema_version,
                r.event_id,
                r.data,
                r.meta,
                r.recorded_at,
                r.effective_at,
            )
            for r in got
        ] == [
            (
                e.position,
                e.stream,
                e.version,
                e.type,
                e.schema_version,
                e.event_id,
                e.data,
                e.meta,
                e.recorded_at,
                e.effective_at,
            )
            for e in want
        ]
        assert got[-1].effective_at == eff and got[0].raw_data == want[0].data
        page = replay_rows.read_rows(raw, after=10, limit=5)
        assert [r.position for r in page] == [11, 12, 13, 14, 15]
        assert [r.position for r in replay_rows.iter_rows(raw, after=140, upto=145, page=2)] == [
            141,
            142,
            143,
            144,
            145,
        ]
        assert replay_rows.read_rows(raw, types=["PodBound"]) == []
        assert len(replay_rows.read_rows(raw, types=["NoteRecorded"], limit=1000)) == 151
        chain = replay_rows.read_chain(raw, after=0, limit=3)
        assert chain[1].prev_hash == chain[0].hash and len(chain[2].hash) == 32


def test_data_is_upcast_only_from_an_older_schema_and_cached():
    text = b'{"pod": "default/p", "node": "n1"}'
    v1 = replay_rows.ReplayRow((1, "pod/default/p", 1, "PodBound", 1, text, b""))
    current = events.current_version("PodBound")
    assert current > 1
    assert v1.data == events.upcast("PodBound", 1, {"pod": "default/p", "node": "n1"})
    assert "group" in v1.data and "group" not in v1.raw_data
    assert v1.data is v1.data  # decoded once
    assert v1.data_text == text
    now = replay_rows.ReplayRow((2, "pod/default/p", 2, "PodBound", current, text, b""))
    assert now.data == {"pod": "default/p", "node": "n1"}  # current schema: as stored
    odd = replay_rows.ReplayRow((3, "x", 1, "NotRegistered", 1, b"[1]", b""))
    assert odd.data == [1]


def test_closing_early_ends_the_pipeline_and_hands_back_the_connection(conn, db_url):
    store.append(conn, [NewEvent(f"s/{i}", "NoteRecorded", {"text": str(i)}) for i in range(200)])
    with replay_rows.connect(db_url) as raw:
        # the caller leaves after 3 of 100 pages
        rows = replay_rows.iter_rows(raw, page=2)
        assert [next(rows).position for _ in range(5)] == [1, 2, 3, 4, 5]
        assert raw.pgconn.pipeline_status != psycopg.pq.PipelineStatus.OFF
        rows.close()
        assert raw.pgconn.pipeline_status == psycopg.pq.PipelineStatus.OFF
        # the connection is the caller's again, and a new iteration reads everything in order
        assert raw.execute("SELECT count(*) FROM events").fetchone() == (200,)
        assert [r.position for r in replay_rows.iter_rows(raw, page=7)] == list(range(1, 201))
        with replay_rows.iter_rows(raw, page=3) as rows:
            assert next(rows).position == 1
        assert raw.pgconn.pipeline_status == psycopg.pq.PipelineStatus.OFF


def test_large_pages_drain_the_socket_and_keep_every_row(conn, db_url):
    # pages far above the socket buffer, with rows handed out in drains of _DRAIN
    big = "x" * 2000
    store.append(conn, [NewEvent(f"b/{i}", "NoteRecorded", {"text": f"{i} {big}"}) for i in range(1203)])
    with replay_rows.connect(db_url) as raw:
        got = [(r.position, r.data["text"]) for r in replay_rows.iter_rows(raw, page=600)]
    assert got == [(i + 1, f"{i} {big}") for i in range(1203)]


def test_a_failing_page_reaches_the_caller_and_no_row_after_it(conn, db_url, monkeypatch):
    store.append(conn, [NewEvent(f"e/{i}", "NoteRecorded", {"text": str(i)}) for i in range(10)])
    real = replay_rows._query

    def failing(after, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        if after >= 4:  # the third page's statement fails on the server
            return "SELECT 1/0", []
        return real(after, *args, **kwargs)

    monkeypatch.setattr(replay_rows, "_query", failing)
    with replay_rows.connect(db_url) as raw:
        got: list[int] = []
        with pytest.raises(psycopg.errors.DivisionByZero):
            for r in replay_rows.iter_rows(raw, page=2):
                got.append(r.position)
        # rows in order and none from or after the failed page (the second page's rows may
        # not be handed out: the error can arrive while the third page is being sent)
        assert len(got) >= 2 and got == [1, 2, 3, 4][: len(got)]
        assert raw.pgconn.pipeline_status == psycopg.pq.PipelineStatus.OFF
