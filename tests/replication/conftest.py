"""Fixtures of the replication tests: a primary and a synchronous standby (``cluster.py``) with
the ledger migrated on the primary; every pool and reader of the test is closed at teardown."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ledger import db, replica
from tests.replication.cluster import Cluster


@pytest.fixture()
def cluster() -> Iterator[Cluster]:
    with Cluster(sync=True) as c:
        yield c
    db.dispose_all()
    replica.close_readers()


@pytest.fixture()
def ledger_url(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The ledger's multi-host URL (both servers, the primary found by libpq), migrated."""
    url = cluster.url("podledger")
    monkeypatch.setenv("PODLEDGER_DATABASE_URL", url)
    db.get_database(url)  # creates and migrates the database on the primary
    yield url
    replica.close_readers()
    db.dispose_all()
