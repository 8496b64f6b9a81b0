"""What a ``bench.paper`` run reports, read back from the run's ledger (not the simulator's memory):
the ``objects`` projection gives each bound pod's node, the log's ``PodBound`` events its devices."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ledger.sql import rows

Placements = dict[str, tuple[str, tuple[int, ...]]]


def placements_from_views(database: Any, namespace: str) -> Placements:
    """``ns/name -> (node, devices)`` of every pod of ``namespace`` the projection shows bound;
    its devices are those of the pod's last ``PodBound`` event (none for a CPU-only pod)."""
    with database.snapshot() as conn:
        bound = rows(
            conn,
            "SELECT name, status->>'nodeName' AS node FROM objects "
            "WHERE kind = 'Pod' AND namespace = %(ns)s AND status->>'phase' = 'Bound'",
            {"ns": namespace},
        )
        devices = rows(
            conn,
            "SELECT DISTINCT ON (data->>'pod') data->>'pod' AS pod, data->'gpus' AS gpus FROM events "
            "WHERE type = 'PodBound' ORDER BY data->>'pod', position DESC",
        )
    gpus = {pod: tuple(int(i) for i in (g or ())) for pod, g in devices}
    out: Placements = {}
    for name, node in bound:
        key = f"{namespace}/{name}"
        out[key] = (node, gpus.get(key, ()))
    return out


# Inputs shared by the runs of one (pod list, seed): the nodes and pods are appended once to an
# inputs ledger, and each policy's run is a copy of it (``CREATE DATABASE ... TEMPLATE``) that then
# gets its SchedulerConfig and is scheduled. One inputs ledger is kept at a time (the runs come in
# (seed, list) order); it is dropped when the key changes and at exit.
_inputs: dict[tuple[Any, ...], str] = {}
IDLE_TIMEOUT = "300s"


def _admin() -> tuple[str, str]:
    from ledger import db

    base = db.libpq_url(db.server_url())
    return base, db.with_database(base, "postgres")


def _create(admin: str, name: str, template: str) -> None:
    import psycopg

    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        # one flush appends ~30k decision events: on a loaded 2-core machine preparing its
        # projection can exceed the ledger's 5 s idle-in-transaction limit (migration 0004); the
        # database's default, set by its owner before any pool connects, is longer
        conn.execute(f"ALTER DATABASE \"{name}\" SET podledger.ledger_idle_timeout = '{IDLE_TIMEOUT}'")


def _drop(admin: str, name: str) -> None:
    import psycopg

    from ledger import db

    base = admin.rsplit("/", 1)[0]
    db.dispose(db.with_database(base, name))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def drop_inputs() -> None:
    """Drop the kept inputs ledger (if any)."""
    if _inputs:
        _, admin = _admin()
        for name in _inputs.values():
            _drop(admin, name)
        _inputs.clear()


def inputs_ledger(key: tuple[Any, ...], build: Callable[[Any], None]) -> str:
    """The name of the inputs ledger of ``key``, made with ``build(database)`` on a fresh migrated
    ledger when it is not the one kept."""
    import atexit

    from api.services.simulate import _ensure_template
    from ledger import db

    if key in _inputs:
        return _inputs[key]
    drop_inputs()
    base, admin = _admin()
    name = f"podledger_sim_in_{uuid.uuid4().hex[:12]}"
    _create(admin, name, _ensure_template(admin, base))
    url = db.with_database(base, name)
    try:
        build(db.get_database(url, migrate_on_start=False))
    except BaseException:
        _drop(admin, name)
        raise
    db.dispose(url)  # a template database must have no connection
    if not _inputs:
        atexit.register(drop_inputs)
    _inputs[key] = name
    return name


@contextmanager
def run_ledger(key: tuple[Any, ...], build: Callable[[Any], None]) -> Iterator[Any]:
    """A private ledger holding the inputs of ``key`` (a copy of its inputs ledger), dropped after."""
    from ledger import db

    template = inputs_ledger(key, build)
    base, admin = _admin()
    name = f"podledger_sim_{uuid.uuid4().hex[:12]}"
    _create(admin, name, template)
    url = db.with_database(base, name)
    try:
        yield db.get_database(url, migrate_on_start=False)
    finally:
        _drop(admin, name)
