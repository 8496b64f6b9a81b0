"""Idempotency-Key over real HTTP (issue 15 item 3): concurrent requests with one key wait for
the first and all get its result (never 409), the key is private to the token that used it, and
the same key with a different body is refused with 422 naming the key."""

from __future__ import annotations

import json
import random
import threading
from typing import Any

import httpx
import pytest

from api.http.app import create_app
from ledger.database import Database
from tests.http.conftest import TOKEN_SPEC, auth, count_events
from tests.reliability._served import served

SEED = 20261203


def _node(name: str, cpu: str = "8") -> str:
    status = {"allocatable": {"cpu": cpu, "memory": "32Gi", "pods": "110"}}
    return json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": status})


def _concurrently(n: int, fn: Any) -> list[Any]:
    """Run fn(i) in n threads released together by a barrier; results in thread order."""
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n

    def run(i: int) -> None:
        barrier.wait(30)
        try:
            results[i] = fn(i)
        except Exception as exc:  # surfaced by the assertions below
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return results


@pytest.mark.timeout(180)
@pytest.mark.parametrize("round_", range(3))
def test_concurrent_requests_with_one_key_get_the_first_result(database: Database, round_: int) -> None:
    rng = random.Random(SEED + round_)
    n = rng.randint(6, 10)
    key = f"key-{rng.getrandbits(48):x}"
    body = _node(f"node-{round_}")
    before = count_events(database)
    with served(create_app(database, TOKEN_SPEC)) as (host, port):
        base = f"http://{host}:{port}"

        def apply(_i: int) -> httpx.Response:
            with httpx.Client(base_url=base, timeout=60) as c:
                return c.post(
                    "/podledger/v1/apply",
                    content=body,
                    headers={**auth("writer"), "Idempotency-Key": key, "Content-Type": "application/json"},
                )

        responses = _concurrently(n, apply)
    assert all(isinstance(r, httpx.Response) for r in responses), responses
    assert [r.status_code for r in responses] == [200] * n, [r.text for r in responses]
    bodies = [r.json() for r in responses]
    assert sum(not b["replayed"] for b in bodies) == 1, bodies
    assert len({tuple(e["position"] for e in b["events"]) for b in bodies}) == 1, bodies
    assert count_events(database) == before + 1


def test_key_with_a_different_body_is_422_and_keys_are_per_token(database: Database) -> None:
    with (
        served(create_app(database, TOKEN_SPEC)) as (host, port),
        httpx.Client(base_url=f"http://{host}:{port}", timeout=60) as c,
    ):

        def apply(body: str, role: str, key: str) -> httpx.Response:
            return c.post(
                "/podledger/v1/apply",
                content=body,
                headers={**auth(role), "Idempotency-Key": key, "Content-Type": "application/json"},
            )

        first = apply(_node("a"), "writer", "shared-key")
        assert first.status_code == 200 and not first.json()["replayed"], first.text
        before = count_events(database)
        again = apply(_node("a"), "writer", "shared-key")
        assert again.status_code == 200 and again.json()["replayed"], again.text
        other = apply(_node("a", cpu="16"), "writer", "shared-key")
        assert other.status_code == 422, other.text
        assert "shared-key" in other.json()["message"]
        assert other.json()["details"][0]["field"] == "Idempotency-Key"
        assert count_events(database) == before
        # another token's key space: the same key is a new request there
        admin = apply(_node("b"), "admin", "shared-key")
        assert admin.status_code == 200 and not admin.json()["replayed"], admin.text
        assert count_events(database) == before + 1
        # deletes: the same key for another object is refused, a retry replays
        d1 = c.delete("/podledger/v1/nodes/-/a", headers={**auth("writer"), "Idempotency-Key": "del-1"})
        assert d1.status_code == 200 and not d1.json()["replayed"], d1.text
        d2 = c.delete("/podledger/v1/nodes/-/a", headers={**auth("writer"), "Idempotency-Key": "del-1"})
        assert d2.status_code == 200 and d2.json()["replayed"], d2.text
        d3 = c.delete("/podledger/v1/nodes/-/b", headers={**auth("writer"), "Idempotency-Key": "del-1"})
        assert d3.status_code == 422 and "del-1" in d3.json()["message"], d3.text
        assert count_events(database) == before + 2
