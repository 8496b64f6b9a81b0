"""The event log as a stream: a logical replication slot on the ``podledger_events``
publication (pgoutput, migration 0027) read into JSON lines, resuming with no gap or duplicate.

psycopg 3 has no client for the replication protocol (psycopg 2's ``replication`` module was not
carried over), so the slot is read through PostgreSQL's own SQL interface to it:
``pg_logical_slot_peek_binary_changes`` returns the pgoutput messages a streaming subscriber
would receive, and ``pg_replication_slot_advance`` confirms what has been written. The messages
are decoded here (``decode``: Begin, Relation, Insert, Commit of protocol version 1; a consumer
of the stream needs nothing else of the log, which only ever inserts).

Exactly once, in order:

- a batch is peeked (the slot does not move), every complete transaction in it is written and
  the file flushed and fsynced, and only then is the slot advanced to that transaction's commit:
  a crash before the advance re-delivers transactions already written, never skips one;
- every line carries the event's ``position``; on start the exporter reads the last position
  of its file and skips events at or before it, so re-delivered events are not written twice;
- every event's ``prev_hash`` must be the ``hash`` of the line before it (the hash chain): a gap
  would break it, and the exporter stops with an error instead of writing past it.

The first run creates the slot and then copies the events committed before it with a plain
query (the stream only has what comes after the slot's creation); overlap is skipped by
position. ``merkle_root`` recomputes the Merkle tree of the lines (``ledger.transparency``: leaf
``i`` is ``leaf_hash(position || hash)``), which a signed checkpoint's root must match
(``check_checkpoint``).
"""

from __future__ import annotations

import json
import os
import struct
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from ledger import transparency as tl

PUBLICATION = "podledger_events"
OPTIONS = ("proto_version", "1", "publication_names", PUBLICATION)


class StreamError(Exception):
    """The stream cannot be read or continued (names the reason)."""


# -------------------------------------------------------------------------------- pgoutput


@dataclass
class Relation:
    name: str
    columns: list[str]


@dataclass
class Transaction:
    """One committed transaction of the stream: its inserted rows (column -> text or None) and
    the WAL position the slot may be advanced to once they are written."""

    xid: int
    rows: list[dict[str, str | None]] = field(default_factory=list)
    commit_lsn: str = ""


def _cstring(buf: bytes, at: int) -> tuple[str, int]:
    end = buf.index(b"\0", at)
    return buf[at:end].decode(), end + 1


def _tuple(buf: bytes, at: int, columns: list[str]) -> tuple[dict[str, str | None], int]:
    (n,) = struct.unpack_from("!h", buf, at)
    at += 2
    row: dict[str, str | None] = {}
    for i in range(n):
        kind = buf[at : at + 1]
        at += 1
        name = columns[i] if i < len(columns) else f"col{i}"
        if kind == b"t":
            (length,) = struct.unpack_from("!i", buf, at)
            at += 4
            row[name] = buf[at : at + length].decode()
            at += length
        elif kind in (b"n", b"u"):
            row[name] = None
        else:
            raise StreamError(f"pgoutput: unexpected tuple column kind {kind!r}")
    return row, at


def decode(messages: Iterator[tuple[str, bytes]], relations: dict[int, Relation]) -> Iterator[Transaction]:
    """Complete transactions from pgoutput messages ``(lsn, data)`` in order; a transaction
    cut off by the end of the batch is not returned (the next peek delivers it whole)."""
    tx: Transaction | None = None
    for lsn, data in messages:
        tag = data[:1]
        if tag == b"B":
            _final, _ts, xid = struct.unpack_from("!qqi", data, 1)
            tx = Transaction(xid)
        elif tag == b"R":
            (oid,) = struct.unpack_from("!I", data, 1)
            _ns, at = _cstring(data, 5)
            name, at = _cstring(data, at)
            at += 1  # replica identity
            (ncols,) = struct.unpack_from("!h", data, at)
            at += 2
            cols: list[str] = []
            for _ in range(ncols):
                at += 1  # flags
                col, at = _cstring(data, at)
                at += 8  # type oid, typmod
                cols.append(col)
            relations[oid] = Relation(name, cols)
        elif tag == b"I":
            (oid,) = struct.unpack_from("!I", data, 1)
            rel = relations.get(oid)
            if rel is None:
                raise StreamError(f"pgoutput: insert into relation {oid} before its description")
            row, _ = _tuple(data, 6, rel.columns)  # 1 tag + 4 oid + 1 'N'
            if tx is not None and rel.name == "events":
                tx.rows.append(row)
        elif tag == b"C":
            if tx is not None:
                tx.commit_lsn = lsn
                yield tx
            tx = None
        # Origin, Type, Message, Truncate, Update, Delete: nothing of the log


# -------------------------------------------------------------------------------- events


def _bytea(text: str | None) -> bytes:
    if not text or not text.startswith("\\x"):
        raise StreamError(f"expected a bytea in hex form, got {text!r}")
    return bytes.fromhex(text[2:])


def line_of(row: dict[str, Any]) -> dict[str, Any]:
    """One event as its JSON line (from a decoded row: column -> text, or a query row)."""

    def js(v: Any) -> Any:
        return json.loads(v) if isinstance(v, str) else v

    def hx(v: Any) -> str:
        return _bytea(v).hex() if isinstance(v, str) else bytes(v).hex()

    def ts(v: Any) -> str:
        return v if isinstance(v, str) else v.isoformat()

    return {
        "position": int(row["position"]),
        "stream": row["stream"],
        "version": int(row["version"]),
        "type": row["type"],
        "schema_version": int(row["schema_version"]),
        "event_id": str(row["event_id"]),
        "data": js(row["data"]),
        "meta": js(row["meta"]),
        "recorded_at": ts(row["recorded_at"]),
        "effective_at": ts(row["effective_at"]),
        "prev_hash": hx(row["prev_hash"]),
        "hash": hx(row["hash"]),
    }


def read_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def merkle_root(lines: list[dict[str, Any]], size: int | None = None) -> bytes:
    """The Merkle root of the first ``size`` (default: all) exported events."""
    chosen = lines if size is None else lines[:size]
    return tl.root_of(
        [tl.leaf_hash(tl.event_entry(int(x["position"]), bytes.fromhex(x["hash"]))) for x in chosen]
    )


def check_checkpoint(lines: list[dict[str, Any]], note: str, verifier: tl.Verifier) -> tl.Checkpoint:
    """The signed checkpoint ``note`` (its signature verified) whose root the exported events
    reproduce; StreamError if they do not (or hold fewer events than it covers)."""
    cp = tl.open_checkpoint(note, verifier)
    if len(lines) < cp.size:
        raise StreamError(f"the export holds {len(lines)} events, the checkpoint covers {cp.size}")
    if merkle_root(lines, cp.size) != cp.root:
        raise StreamError(f"the export's first {cp.size} events do not have the checkpoint's root")
    return cp


# -------------------------------------------------------------------------------- exporter


class Exporter:
    """Appends the log to ``out`` (JSON lines) through the logical slot ``slot`` on ``url``
    (a login with the REPLICATION attribute, e.g. the owner)."""

    def __init__(self, url: str, out: Path, slot: str = "podledger_export", batch: int = 2000) -> None:
        self.url = url
        self.out = out
        self.slot = slot
        self.batch = batch
        self.relations: dict[int, Relation] = {}
        last = _last_line(out)
        self.last_position = int(last["position"]) if last else 0
        self.last_hash = bytes.fromhex(last["hash"]) if last else None
        self.written = 0

    def _write(self, f: Any, rows: list[dict[str, Any]]) -> int:
        n = 0
        for row in rows:
            line = line_of(row)
            if line["position"] <= self.last_position:
                continue  # delivered again after a restart: written already
            if self.last_hash is not None and bytes.fromhex(line["prev_hash"]) != self.last_hash:
                raise StreamError(
                    f"gap before position {line['position']}: its prev_hash is not the hash of "
                    f"position {self.last_position}, the last one exported"
                )
            f.write(json.dumps(line, separators=(",", ":"), sort_keys=True) + "\n")
            self.last_position, self.last_hash = line["position"], bytes.fromhex(line["hash"])
            n += 1
        if n:
            f.flush()
            os.fsync(f.fileno())
        self.written += n
        return n

    def _ensure_slot(self, conn: psycopg.Connection[Any]) -> bool:
        """Create the slot if missing; True when it was created now."""
        found = conn.execute(
            "SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (self.slot,)
        ).fetchone()
        if found:
            return False
        version = conn.info.server_version
        try:
            if version >= 170000:  # a failover slot: standbys with sync_replication_slots keep it
                conn.execute(
                    "SELECT pg_create_logical_replication_slot(%s, 'pgoutput', false, false, true)",
                    (self.slot,),
                )
            else:
                conn.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (self.slot,))
        except psycopg.errors.ObjectNotInPrerequisiteState as exc:
            raise StreamError(
                f"cannot create logical slot {self.slot}: {exc} (set wal_level = logical)"
            ) from exc
        return True

    def _copy_existing(self, conn: psycopg.Connection[Any], f: Any) -> None:
        """The events committed before the slot existed (a plain read; the stream has the rest)."""
        with conn.cursor(row_factory=psycopg.rows.dict_row) as cur:
            cur.execute(
                "SELECT position, stream, version, type, schema_version, event_id, data::text AS data, "
                "meta::text AS meta, recorded_at::text AS recorded_at, effective_at::text AS effective_at, "
                "prev_hash, hash FROM events WHERE position > %s ORDER BY position",
                (self.last_position,),
            )
            while True:
                rows = cur.fetchmany(5000)
                if not rows:
                    break
                self._write(f, rows)

    def step(self, conn: psycopg.Connection[Any], f: Any, limit: int | None = None) -> int:
        """One batch: peek, write the complete transactions, advance the slot past them.
        ``limit``: stop writing after that many new events (the slot then stays at the last
        transaction written whole). Returns the events written."""
        row = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
        upto = str(row[0]) if row else None
        raw = conn.execute(
            "SELECT lsn::text, data FROM pg_logical_slot_peek_binary_changes(%s, %s::pg_lsn, %s, "
            "VARIADIC %s::text[])",
            (self.slot, upto, self.batch, list(OPTIONS)),
        ).fetchall()
        # fewer rows than the batch: decoding reached ``upto``, every transaction committed
        # before it is in ``raw`` (or published nothing), so the slot may move up to it
        complete = len(raw) < self.batch
        self.relations.clear()  # every peek starts over from the slot: Relation messages again
        n = 0
        confirmed = None
        for tx in decode(((str(lsn), bytes(data)) for lsn, data in raw), self.relations):
            if limit is not None and n >= limit:
                complete = False
                break
            rows = tx.rows if limit is None else tx.rows[: max(0, limit - n)]
            n += self._write(f, list(rows))
            if len(rows) == len(tx.rows):
                confirmed = tx.commit_lsn
            else:
                complete = False
        if complete and upto is not None:
            confirmed = upto
        if confirmed is not None:
            conn.execute("SELECT pg_replication_slot_advance(%s, %s::pg_lsn)", (self.slot, confirmed))
        return n

    def run(
        self,
        *,
        follow: bool = True,
        poll: float = 0.5,
        max_events: int | None = None,
        stop: Callable[[], bool] = lambda: False,
    ) -> int:
        """Export until ``stop()`` (``follow``), or until the slot has nothing more
        (``follow=False``), or ``max_events`` were written. Returns the events written.

        Following, a lost connection (a restart, a failover: a multi-host URL then finds the
        promoted server) is reopened every ``poll`` seconds (at most 5); the slot is found
        there (a failover slot) or created anew, with the events since the file's last position
        copied first, so the file has no gap either way."""
        self.out.parent.mkdir(parents=True, exist_ok=True)
        with self.out.open("a") as f:
            while True:
                try:
                    return self._run(f, follow, poll, max_events, stop)
                except psycopg.OperationalError:
                    if not follow or stop():
                        raise
                    time.sleep(min(max(poll, 0.1), 5.0))

    def _run(
        self, f: Any, follow: bool, poll: float, max_events: int | None, stop: Callable[[], bool]
    ) -> int:
        with psycopg.connect(self.url, autocommit=True, connect_timeout=10) as conn:
            if self._ensure_slot(conn):
                self._copy_existing(conn, f)
            while not stop():
                left = None if max_events is None else max_events - self.written
                if left is not None and left <= 0:
                    break
                if self.step(conn, f, left) == 0:
                    if not follow:
                        break
                    time.sleep(poll)
        return self.written


def _last_line(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    with path.open("rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - 65536))
        tail = f.read().splitlines()
    for line in reversed(tail):
        if line.strip():
            try:
                value: dict[str, Any] = json.loads(line)
            except ValueError as exc:  # a line cut by a crash mid-write
                raise StreamError(f"{path}: its last line is not complete JSON; remove it to resume") from exc
            return value
    return None


def drop_slot(url: str, slot: str) -> None:
    with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
        conn.execute(
            "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s",
            (slot,),
        )
