"""Asynchronous jobs of this process (what-if runs), kept in memory."""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

KEEP_JOBS = 200


class JobStore:
    """In-memory jobs of this process (newest KEEP_JOBS kept), run one at a time."""

    def __init__(self) -> None:
        self._jobs: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="podledger-job")
            return self._pool

    def submit(self, kind: str, fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        job_id = uuid.uuid4().hex
        job: dict[str, Any] = {
            "id": job_id,
            "kind": kind,
            "status": "pending",
            "createdAt": datetime.now(UTC),
            "startedAt": None,
            "finishedAt": None,
            "result": None,
            "error": None,
        }
        with self._lock:
            self._jobs[job_id] = job
            while len(self._jobs) > KEEP_JOBS:
                self._jobs.popitem(last=False)

        def run() -> None:
            job["startedAt"] = datetime.now(UTC)
            job["status"] = "running"
            try:
                job["result"] = fn()
                job["status"] = "succeeded"
            except Exception as exc:  # reported through the job, never as a 5xx
                job["error"] = f"{type(exc).__name__}: {exc}"
                job["status"] = "failed"
            finally:
                job["finishedAt"] = datetime.now(UTC)

        self._executor().submit(run)
        return job

    def get(self, job_id: str) -> dict[str, Any] | None:
        with self._lock:
            job = self._jobs.get(job_id)
            return dict(job) if job else None


__all__ = ["KEEP_JOBS", "JobStore"]
