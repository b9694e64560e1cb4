"""`POST /api/stream-tokens`, and the one 401 answer for every authentication failure."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse

from app.api.deps import AuthDep, CallerDep
from app.api.errors import error_response
from app.api.schemas.identity import MeOut, StreamTokenOut, StreamTokenRequest
from app.auth.authenticator import log_failure
from app.auth.errors import Unauthorized

router = APIRouter(prefix="/api", tags=["auth"])


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


def install_auth_error_handler(app: FastAPI) -> None:
    async def on_unauthorized(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, Unauthorized)
        log_failure(exc, request)
        return error_response(
            request,
            401,
            exc.code,
            exc.message,
            headers={"WWW-Authenticate": 'Bearer realm="chat-bff"'},
        )

    app.add_exception_handler(Unauthorized, on_unauthorized)
