"""GET /podledger/v1/checkpoint: the newest signed checkpoint of the log (C2SP signed note, text/plain).

With a signing key configured on the server (``PODLEDGER_CHECKPOINT_KEY`` or
``$PODLEDGER_HOME/checkpoint.key``), the Merkle tree is extended first and a new checkpoint is
signed when the log has grown since the newest one; without a key, the newest stored checkpoint
(made by ``podledger checkpoint`` or the worker) is returned. See docs/transparency.md.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import PlainTextResponse, Response

from api.http.auth import Principal
from api.http.context import context
from api.http.errors import ApiError
from api.http.routes.deps import AUTH_ERRORS, _err, reader
from api.http.routes.paths import PREFIX

router = APIRouter(prefix=PREFIX, tags=["log"])


def _checkpoint(request: Request) -> str:
    from ledger import anchor

    db = context(request).db
    if anchor.key_path().exists():
        try:
            return anchor.make_checkpoint(db, anchor.load_signer()).note
        except anchor.AnchorError as exc:
            raise ApiError(409, "conflict", str(exc)) from exc
    note = anchor.latest_note(db)
    if note is None:
        raise ApiError(
            404, "not_found", "no checkpoint yet: the server has no signing key and none was stored"
        )
    return note


@router.get(
    "/checkpoint",
    response_class=Response,
    summary="The newest signed checkpoint (tree size and Merkle root) of the log",
    responses={
        200: {
            "content": {"text/plain": {"schema": {"type": "string"}}},
            "description": "A C2SP signed note: origin, tree size, base64 root hash, signature line",
        },
        **AUTH_ERRORS,
        404: _err("No checkpoint yet"),
        409: _err("The log does not match its hashes"),
    },
)
async def get_checkpoint(request: Request, _p: Annotated[Principal, Depends(reader)]) -> PlainTextResponse:
    note = await run_in_threadpool(_checkpoint, request)
    return PlainTextResponse(note, media_type="text/plain; charset=utf-8")
