"""Admin-only routes: what changes how the ledger operates (not what it records).

- ``POST /podledger/v1/admin/projections/rebuild``: re-fold every projection from position 0
  (like ``podledger projections rebuild``); the log is not touched.
- ``POST /podledger/v1/admin/checkpoint``: sign and store a checkpoint now (like
  ``podledger checkpoint``), with the server's signing key.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool

from api.http.auth import Principal
from api.http.context import context
from api.http.errors import ApiError
from api.http.routes.deps import AUTH_ERRORS, _err, admin
from api.http.routes.paths import PREFIX

router = APIRouter(prefix=f"{PREFIX}/admin", tags=["admin"])


def _rebuild(request: Request) -> dict[str, int]:
    from ledger.projections.runner import ASYNC_PROJECTIONS, rebuild_async, rebuild_current

    db = context(request).db
    folded = {"objects": rebuild_current(db)}
    for name, proj in ASYNC_PROJECTIONS.items():
        folded[name] = rebuild_async(db, proj)
    return folded


@router.post(
    "/projections/rebuild",
    summary="Re-fold every projection from position 0 (admin)",
    responses=AUTH_ERRORS,
)
async def rebuild_projections(request: Request, _p: Annotated[Principal, Depends(admin)]) -> dict[str, Any]:
    return {"refolded": await run_in_threadpool(_rebuild, request)}


def _checkpoint(request: Request) -> str:
    from ledger import anchor

    if not anchor.key_path().exists():
        raise ApiError(409, "conflict", "the server has no checkpoint signing key")
    try:
        return anchor.make_checkpoint(context(request).db, anchor.load_signer()).note
    except anchor.AnchorError as exc:
        raise ApiError(409, "conflict", str(exc)) from exc


@router.post(
    "/checkpoint",
    summary="Sign and store a checkpoint of the log now (admin)",
    responses={**AUTH_ERRORS, 409: _err("No signing key on the server, or the log could not be anchored")},
)
async def sign_checkpoint(request: Request, _p: Annotated[Principal, Depends(admin)]) -> dict[str, Any]:
    return {"checkpoint": await run_in_threadpool(_checkpoint, request)}
