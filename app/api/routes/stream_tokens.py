"""`POST /api/stream-tokens` (tokens for EventSource URLs) and `GET /api/me`."""

from __future__ import annotations

from datetime import UTC, datetime

from app.api.deps import AuthDep, CallerDep
from app.api.routing import api_router
from app.api.schemas.identity import MeOut, StreamTokenOut, StreamTokenRequest

router = api_router(prefix="/api", tags=["auth"])


@router.post(
    "/stream-tokens",
    response_model=StreamTokenOut,
    summary="Mint a short-lived token for an EventSource URL (`?token=`).",
)
async def mint_stream_token(
    body: StreamTokenRequest, auth: AuthDep, caller: CallerDep
) -> StreamTokenOut:
    minted = auth.stream_tokens.mint(caller, path=body.path, run_id=body.run_id)
    return StreamTokenOut(
        token=minted.token, expires_at=datetime.fromtimestamp(minted.expires_at, UTC)
    )


@router.get("/me", response_model=MeOut, summary="Who the service thinks you are.")
async def me(caller: CallerDep) -> MeOut:
    return MeOut(user_id=caller.user_id, roles=sorted(caller.roles), method=caller.method)
