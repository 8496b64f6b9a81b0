"""Peak RSS and SIGTERM latency of ``podledger attach`` against the hostile fake server (issue 37):
after syncing 50 pods, then after a 1.2 MiB pod and a 256 MiB watch line with no newline.

    .venv/bin/python tests/attach/measure_rss.py

Uses the PostgreSQL on 127.0.0.1:5432 (trust auth) and (re)makes the database ``attach_rss``.
Not a test (fixed waits): it prints what it measured.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.attach.hostile import Hostile, endless, line, peak_rss_mb, pod, script  # noqa: E402

ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
URL = "postgresql://postgres@127.0.0.1:5432/attach_rss"


def main() -> None:
    with psycopg.connect(ADMIN, autocommit=True) as c:
        c.execute("DROP DATABASE IF EXISTS attach_rss WITH (FORCE)")
        c.execute("CREATE DATABASE attach_rss")
    h = Hostile()
    h.pods = [pod(f"p{i}", 5 + i) for i in range(50)]
    kc = h.kubeconfig(Path(tempfile.mkdtemp()) / "kubeconfig")
    podledger = str(Path(sys.executable).with_name("podledger"))
    p = subprocess.Popen(
        [podledger, "attach", "--kubeconfig", str(kc), "--progress-every", "5"],
        env=dict(os.environ, PODLEDGER_DATABASE_URL=URL),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(15)
        base = peak_rss_mb(p.pid)
        big = pod("big", 100, metadata={"annotations": {"blob": "x" * (1200 * 1024)}})
        h.watch_scripts.put(script(line("ADDED", big)))
        h.watch_scripts.put(endless(b"x" * 65536, 256 << 20, b"\n" + line("ADDED", pod("after", 101))))
        start = time.monotonic()
        while h.sent < (256 << 20) and time.monotonic() - start < 120:
            time.sleep(0.5)
        time.sleep(3)
        peak = peak_rss_mb(p.pid)
        p.terminate()
        t = time.monotonic()
        code = p.wait(30)
        print(f"peak RSS after syncing 50 pods: {base:.0f} MB")
        print(f"peak RSS after a 1.2 MiB pod and a 256 MiB watch line: {peak:.0f} MB")
        print(f"SIGTERM to exit: {time.monotonic() - t:.2f} s (exit {code})")
        with psycopg.connect(URL) as c:
            rows = c.execute(
                "SELECT type, count(*) FROM events WHERE type IN ('PodCreated', 'RemoteObjectInvalid') GROUP BY 1"
            ).fetchall()
        print(dict(rows))
    finally:
        if p.poll() is None:
            p.kill()
        h.close()


if __name__ == "__main__":
    main()
