"""Asynchronous jobs: what-if runs (POST /podledger/v1/whatif → 202 + a status URL)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request, Response

from api.http.auth import Principal
from api.http.context import context
from api.http.errors import ApiError
from api.http.routes.deps import COMMON_ERRORS, reader, writer
from api.http.routes.paths import PREFIX, job_url
from api.http.schemas import Job, WhatIfRequest
from api.services.whatif import whatif as run_whatif

router = APIRouter(prefix=PREFIX, tags=["jobs"])


def _view(job: dict[str, Any]) -> Job:
    return Job.model_validate({**job, "statusUrl": job_url(job["id"])})


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
    request: Request,
    response: Response,
    body: WhatIfRequest,
    principal: Annotated[Principal, Depends(writer)],
) -> Job:
    ctx = context(request)
    db = ctx.db
    config = body.config

    def run() -> dict[str, Any]:
        return run_whatif(db, config)

    job = ctx.jobs.submit("whatif", run)
    view = _view(job)
    response.headers["Location"] = view.statusUrl
    return view


@router.get(
    "/jobs/{job_id}", response_model=Job, summary="Status and result of a job", responses=COMMON_ERRORS
)
async def get_job(
    request: Request,
    job_id: Annotated[str, Path(max_length=64)],
    _p: Annotated[Principal, Depends(reader)],
) -> Job:
    job = context(request).jobs.get(job_id)
    if job is None:
        raise ApiError(404, "not_found", f"no job {job_id!r} on this server")
    return _view(job)
