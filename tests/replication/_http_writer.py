"""A writer through both HTTP APIs across a failover (``python -m tests.replication._http_writer
URL ACKS STOP PREFIX``).

Serves podledger's app (uvicorn, a real HTTP server) on the ledger at URL (a multi-host URL)
and, until the file STOP exists, creates pods alternately through the JSON API
(``POST /podledger/v1/apply`` with an ``Idempotency-Key``) and the Kubernetes API
(``POST /api/v1/namespaces/default/pods``). A 503 (the database unreachable) or a dropped
connection is retried with the same request; only a 2xx is acknowledged (``pod NAME`` to ACKS,
flushed and fsynced). A Kubernetes create retried after a commit whose answer was lost finds
the pod: its 409 AlreadyExists on a retry acknowledges the first attempt. Anything else ends the
process with an error (exit 1).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

RETRY_FOR = 60.0
TOKEN = "writer-token-0123456789"


def main(url: str, acks: str, stop: str, prefix: str) -> int:
    import httpx

    from api.http.app import create_app
    from ledger import db
    from tests.reliability._served import served

    app = create_app(db.get_database(url, migrate_on_start=False), f"writer={TOKEN}")
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with served(app) as (host, port), httpx.Client(base_url=f"http://{host}:{port}", timeout=30) as client:
        with open(acks, "a", buffering=1) as out:
            i = 0
            while not Path(stop).exists():
                name = f"{prefix}-{i}"
                pod = {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": name, "namespace": "default"},
                    "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]},
                }
                k8s = i % 2 == 1
                deadline = time.monotonic() + RETRY_FOR
                attempt = 0
                while True:
                    attempt += 1
                    try:
                        if k8s:
                            r = client.post("/api/v1/namespaces/default/pods", json=pod, headers=headers)
                        else:
                            r = client.post(
                                "/podledger/v1/apply",
                                content=json.dumps(pod),
                                headers={
                                    **headers,
                                    "Content-Type": "application/json",
                                    "Idempotency-Key": name,
                                },
                            )
                    except httpx.TransportError as exc:
                        status, text = 0, str(exc)
                    else:
                        status, text = r.status_code, r.text[:300]
                    if 200 <= status < 300 or (k8s and status == 409 and attempt > 1):
                        break
                    if status not in (0, 503) or time.monotonic() > deadline:
                        sys.stderr.write(f"FAILED {name} ({'k8s' if k8s else 'json'}): {status} {text}\n")
                        return 1
                    sys.stderr.write(f"retry {name} (attempt {attempt}): {status}\n")
                    sys.stderr.flush()
                    time.sleep(0.1)
                out.write(f"pod {name}\n")
                out.flush()
                os.fsync(out.fileno())
                i += 1
                time.sleep(0.02)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
