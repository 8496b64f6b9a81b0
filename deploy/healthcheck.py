"""Container health checks (no curl in the image): ``python deploy/healthcheck.py api|worker``.

- ``api``: GET http://127.0.0.1:$PORT/readyz answers 200 (database reachable and migrated).
- ``worker``: the ledger has a scheduling leader, i.e. some session holds the worker's
  leader advisory lock (with one worker replica, that is this container's worker).

Exit 0 when healthy, 1 otherwise (the reason on stderr).
"""

from __future__ import annotations

import os
import sys
import urllib.request

WORKER_LEADER_LOCK = 7243150010  # scheduler.edge.worker.LEADER_LOCK


def check_api(port: int) -> str | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=3) as resp:
            return None if resp.status == 200 else f"/readyz answered {resp.status}"
    except Exception as exc:  # HTTPError (503), connection refused, timeout
        return f"/readyz: {exc}"


def check_worker(url: str) -> str | None:
    import psycopg

    try:
        with psycopg.connect(url, connect_timeout=3) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
                "AND ((classid::bigint << 32) | objid::bigint) = %s",
                (WORKER_LEADER_LOCK,),
            ).fetchone()
    except Exception as exc:
        return f"database: {exc}"
    return None if row and row[0] >= 1 else "no worker holds the leader lock"


def main(argv: list[str]) -> int:
    mode = argv[1] if len(argv) > 1 else ""
    if mode == "api":
        problem = check_api(int(os.environ.get("PORT", "8080")))
    elif mode == "worker":
        url = os.environ.get("PODLEDGER_APP_DATABASE_URL") or os.environ.get("PODLEDGER_DATABASE_URL", "")
        problem = check_worker(url) if url else "PODLEDGER_DATABASE_URL is not set"
    else:
        print("usage: healthcheck.py api|worker", file=sys.stderr)
        return 2
    if problem:
        print(f"unhealthy: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
