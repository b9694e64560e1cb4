"""`POST /api/stream-tokens` (tokens for EventSource URLs) and `GET /api/me`.

A token for a run is minted only for one of the caller's own runs: any other run id is
404, as every request naming an unknown run is, so a client learns at once that its id is
wrong (and nothing about another user's runs) rather than holding a token that opens
nothing. A path token names a prefix, not a resource, and is minted as asked.
"""

from __future__ import annotations

from datetime import UTC, datetime

from app.api.deps import AuthDep, CallerDep, DbDep
from app.api.routing import api_router
from app.api.schemas.identity import MeOut, StreamTokenOut, StreamTokenRequest

router = api_router(prefix="/api", tags=["auth"])


@router.post(
    "/stream-tokens",
    response_model=StreamTokenOut,
    summary="Mint a short-lived token for an EventSource URL (`?token=`).",
    responses={404: {"description": "`run_id` is not one of your runs."}},
)
async def mint_stream_token(
    body: StreamTokenRequest, auth: AuthDep, caller: CallerDep, db: DbDep
) -> StreamTokenOut:
    if body.run_id is not None:
        async with db.read() as tx:
            await tx.runs.get(caller.user_id, body.run_id)  # NotFound: 404
    minted = auth.stream_tokens.mint(caller, path=body.path, run_id=body.run_id)
    return StreamTokenOut(
        token=minted.token, expires_at=datetime.fromtimestamp(minted.expires_at, UTC)
    )


@router.get("/me", response_model=MeOut, summary="Who the service thinks you are.")
async def me(caller: CallerDep) -> MeOut:
    return MeOut(user_id=caller.user_id, roles=sorted(caller.roles), method=caller.method)
