"""Asynchronous jobs: what-if runs (POST /podledger/v1/whatif → 202 + a status URL)."""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request, Response

from api.app import ApiError, context
from api.auth import Principal
from api.routes.deps import COMMON_ERRORS, reader, writer
from api.schemas import Job, WhatIfRequest

router = APIRouter(prefix="/podledger/v1", tags=["jobs"])

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


def _view(job: dict[str, Any]) -> Job:
    return Job.model_validate({**job, "statusUrl": f"/podledger/v1/jobs/{job['id']}"})


@router.post(
    "/whatif",
    status_code=202,
    response_model=Job,
    summary="Start a what-if run",
    description="Re-runs the recorded inputs under another SchedulerConfig spec and diffs the outcomes. "
    "Answers 202 at once; poll the `statusUrl` (also in `Location`) until `status` is succeeded or failed.",
    responses={**COMMON_ERRORS, 202: {"headers": {"Location": {"schema": {"type": "string"}}}}},
)
async def whatif(
    request: Request, response: Response, body: WhatIfRequest, principal: Annotated[Principal, Depends(writer)]
) -> Job:
    ctx = context(request)
    engine = ctx.engine
    config = body.config

    def run() -> dict[str, Any]:
        from api import audit

        return audit.whatif(engine, config)

    job = ctx.jobs.submit("whatif", run)
    view = _view(job)
    response.headers["Location"] = view.statusUrl
    return view


@router.get("/jobs/{job_id}", response_model=Job, summary="Status and result of a job", responses=COMMON_ERRORS)
async def get_job(
    request: Request,
    job_id: Annotated[str, Path(max_length=64)],
    _p: Annotated[Principal, Depends(reader)],
) -> Job:
    job = context(request).jobs.get(job_id)
    if job is None:
        raise ApiError(404, "not_found", f"no job {job_id!r} on this server")
    return _view(job)
