"""GET /podledger/v1/checkpoint: the newest signed checkpoint of the log (C2SP signed note, text/plain).

With a signing key configured on the server (``PODLEDGER_CHECKPOINT_KEY`` or
``$PODLEDGER_HOME/checkpoint.key``), the Merkle tree is extended first and a new checkpoint is
signed when the log has grown since the newest one; without a key, the newest stored checkpoint
(made by ``podledger checkpoint`` or the worker) whose signature verifies with the verifier key
``PODLEDGER_CHECKPOINT_VERIFIER_KEY`` is returned (a stored row is never served unchecked). See
docs/transparency.md.
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
    try:
        if anchor.key_path().exists():
            return anchor.make_checkpoint(db, anchor.load_signer()).note
        verifier = anchor.configured_verifier()
    except anchor.AnchorError as exc:
        raise ApiError(409, "conflict", str(exc)) from exc
    if verifier is None:
        raise ApiError(
            409,
            "conflict",
            "the server has no signing key and no verifier key (PODLEDGER_CHECKPOINT_VERIFIER_KEY): "
            "it serves no stored checkpoint it cannot check",
        )
    note = anchor.latest_note(db, verifier)
    if note is None:
        raise ApiError(404, "not_found", f"no checkpoint signed with key {verifier.name} is stored yet")
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
        409: _err("The log does not match its hashes, or the server has no key to sign or check one"),
    },
)
async def get_checkpoint(request: Request, _p: Annotated[Principal, Depends(reader)]) -> PlainTextResponse:
    note = await run_in_threadpool(_checkpoint, request)
    return PlainTextResponse(note, media_type="text/plain; charset=utf-8")
