"""What a forger holding the application's database login (``podledger_app``) sends: rows of
``events`` with a correct hash and chain link unless told otherwise, written by hand on a plain
psycopg connection (tests/reliability/test_attacks_*.py)."""

from __future__ import annotations

import os
import subprocess
import uuid
from datetime import datetime
from typing import Any

import orjson
import psycopg

from ledger import db
from ledger.canonical import canonical, event_hash

from .conftest import PODLEDGER, ROOT

COLUMNS = (
    "stream, version, type, schema_version, event_id, data, meta, effective_at, recorded_at, prev_hash, hash"
)


def app_conn(db_url: str) -> psycopg.Connection[Any]:
    """A session as the application login, autocommit."""
    conn = psycopg.connect(db.app_url(db_url), autocommit=True)
    assert conn.execute("SELECT current_user").fetchone() == (db.APP_ROLE,)
    return conn


def su_conn(db_url: str) -> psycopg.Connection[Any]:
    return psycopg.connect(db.libpq_url(db_url), autocommit=True)


def head(conn: psycopg.Connection[Any]) -> tuple[int, bytes]:
    pos, h = conn.execute("SELECT position, hash FROM events ORDER BY position DESC LIMIT 1").fetchone()  # type: ignore[misc]
    return int(pos), bytes(h)


def stored(conn: psycopg.Connection[Any], stream: str, version: int = 1) -> dict[str, Any]:
    """The stored event ``version`` of ``stream`` (type, data and meta decoded)."""
    typ, sv, data, meta = conn.execute(  # type: ignore[misc]
        "SELECT type, schema_version, data::text, meta::text FROM events WHERE stream = %s AND version = %s",
        (stream, version),
    ).fetchone()
    return {"type": typ, "schema_version": sv, "data": orjson.loads(data), "meta": orjson.loads(meta)}


def forge(
    conn: psycopg.Connection[Any],
    stream: str,
    version: int,
    typ: str,
    data: dict[str, Any],
    meta: dict[str, Any] | None = None,
    *,
    schema_version: int = 1,
    prev: bytes | None = None,
    recorded: datetime | None = None,
    copy: bool = False,
) -> None:
    """Insert one event by hand in one transaction: ``prev`` (default: the head's hash, a
    correct link), ``recorded`` (default: the server's clock in this transaction), the hash
    computed as ``ledger.canonical.event_hash`` (hash version 2) over exactly these values. With
    ``copy`` the row goes in by COPY (the batched append's statement) instead of INSERT."""
    meta = meta or {}
    with conn.transaction():
        link = head(conn)[1] if prev is None else prev
        now = conn.execute("SELECT clock_timestamp()").fetchone()[0]  # type: ignore[index]
        rec = now if recorded is None else recorded
        eid = uuid.uuid4()
        h = event_hash(
            link,
            stream=stream,
            version=version,
            type=typ,
            schema_version=schema_version,
            event_id=eid,
            data_bytes=canonical(data),
            meta_bytes=canonical(meta),
            effective_at=now,
            recorded_at=rec,
        )
        row = (
            stream,
            version,
            typ,
            schema_version,
            eid,
            orjson.dumps(data).decode(),
            orjson.dumps(meta).decode(),
        )
        row += (now, rec, link, h)
        if copy:
            with conn.cursor().copy(f"COPY events ({COLUMNS}) FROM STDIN") as cp:
                cp.write_row(row)
        else:
            conn.execute(
                f"INSERT INTO events ({COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s::jsonb, %s::jsonb, %s, %s, %s, %s)",
                row,
            )


def cli(url: str, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    full = dict(os.environ, PODLEDGER_DATABASE_URL=url, **(env or {}))
    p = subprocess.run([PODLEDGER, *args], cwd=ROOT, env=full, capture_output=True, text=True, timeout=120)
    out = p.stdout + p.stderr
    assert "Traceback" not in out, out
    return p.returncode, out
