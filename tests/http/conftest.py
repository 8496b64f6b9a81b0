"""Fixtures of the HTTP tests: an app over a fresh real database, tokens, demo data."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from fastapi.testclient import TestClient

from api.http.app import create_app
from ledger import db
from ledger.database import Database
from ledger.sql import scalar
from tests.conftest import _admin, new_database

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "cluster"
OUTPUT = ROOT / "test-output"

TOKENS = {
    "reader": "reader-token-0123456789",
    "writer": "writer-token-0123456789",
    "admin": "admin-token-0123456789",
}
TOKEN_SPEC = ",".join(f"{role}={tok}" for role, tok in TOKENS.items())

# A gang that can never fit (3 pods of 200 CPUs), so the demo has an unschedulable group.
GIANT = """
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: giant, namespace: team-a}
spec:
  schedulingPolicy: {gang: {minCount: 3}}
  priorityClassName: training-high
""" + "".join(
    f"""---
apiVersion: v1
kind: Pod
metadata: {{name: giant-{i}, namespace: team-a}}
spec:
  priorityClassName: training-high
  schedulingGroup: {{podGroupName: giant}}
  containers: [{{name: c, resources: {{requests: {{cpu: 200}}}}}}]
"""
    for i in range(3)
)


def auth(role: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[role]}"}


@pytest.fixture()
def app(database: Database):  # type: ignore[no-untyped-def]
    return create_app(database, TOKEN_SPEC)


@pytest.fixture()
def client(app) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


def count_events(database: Database, where: str = "TRUE") -> int:
    with database.connect() as c:
        return int(scalar(c, f"SELECT count(*) FROM events WHERE {where}"))


def load_demo(database: Database, *, extra: str = GIANT) -> None:
    """The example cluster (+ an unschedulable gang), applied and scheduled until idle."""
    from api.cli.scheduling import schedule_until_idle
    from api.services.objects import load_documents
    from ledger.resources.parse import iter_path, parse_documents
    from tests.ledger_helpers import apply

    objects, errors = load_documents(iter_path(EXAMPLES))
    assert not errors, errors
    res = apply(database, objects, actor="demo", source=str(EXAMPLES))
    assert res.ok, res.errors
    if extra:
        more, errors = load_documents(parse_documents(extra, "extra"))
        assert not errors, errors
        assert apply(database, more, actor="demo").ok
    schedule_until_idle(database, progress=False)


@pytest.fixture(scope="module")
def demo_database(server_url: str) -> Iterator[Database]:
    """One database with the demo loaded, shared by the read-only tests of a module."""
    url = new_database(server_url)
    database = db.get_database(url, migrate_on_start=False)
    load_demo(database)
    yield database
    db.dispose(url)
    with psycopg.connect(_admin(server_url), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{db.database_name(url)}" WITH (FORCE)')


@pytest.fixture(scope="module")
def demo_client(demo_database: Database) -> Iterator[TestClient]:
    with TestClient(create_app(demo_database, TOKEN_SPEC), raise_server_exceptions=False) as c:
        yield c
