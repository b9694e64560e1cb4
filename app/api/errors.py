"""One error body for every failure: `{"error": {"code", "message", ...}}`.

The OpenAI-compatible surface (`/v1/...`) answers in OpenAI's own shape instead
(`{"error": {"message", "type", "param", "code"}}`), so the official SDK raises the
right exception class.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from app.auth.errors import Unauthorized
from app.domain.errors import ChatBffError, ProviderError, RetryLater
from app.domain.text import valid_json

log = logging.getLogger("chat_bff.errors")

_OPENAI_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    408: "invalid_request_error",
    409: "conflict_error",
    413: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_exceeded",
}


def _is_openai_surface(request: Request) -> bool:
    return request.url.path.startswith("/v1/")


def error_response(
    request: Request,
    status: int,
    code: str,
    message: str,
    *,
    headers: dict[str, str] | None = None,
    param: str | None = None,
    **extra: Any,
) -> JSONResponse:
    if _is_openai_surface(request):
        body: dict[str, Any] = {
            "error": {
                "message": message,
                "type": _OPENAI_TYPES.get(status, "server_error" if status >= 500 else "error"),
                "param": param,
                "code": code,
            }
        }
    else:
        body = {"error": {"code": code, "message": message, **extra}}
        if param is not None:
            body["error"]["param"] = param
    # The message may echo what a client sent (a field name, a model id): make it valid
    # text, or encoding the answer would raise and turn a 4xx into a 500.
    return JSONResponse(valid_json(body), status_code=status, headers=headers)


def log_provider_failure(exc: ProviderError) -> None:
    """A failed model call, with its cause: our message (written by us, redacted), the
    upstream status and the vendor exception's type, never its text."""
    log.warning(
        "model call failed: %s",
        exc.message,
        extra={
            "code": exc.code,
            "provider": exc.provider,
            "upstream_status": exc.upstream_status,
            "cause": type(exc.__cause__).__name__ if exc.__cause__ else None,
        },
    )


def retry_after_header(exc: ChatBffError) -> dict[str, str] | None:
    retry_after = getattr(exc, "retry_after", None)
    if isinstance(exc, RetryLater | ProviderError) and retry_after is not None:
        return {"Retry-After": str(max(1, round(retry_after)))}
    return None


def _validation_detail(errors: list[Any]) -> list[dict[str, Any]]:
    # The offending input is left out: it may be a secret the caller pasted by mistake.
    return [
        {"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")), "type": e.get("type")}
        for e in errors
    ]


class RefusedBody(StarletteHTTPException):
    """A body refused while it is read, with its own `code` and `param`: there FastAPI
    passes an HTTPException through and turns any other error into a vague 400."""

    def __init__(
        self,
        status: int,
        code: str,
        param: str | None,
        message: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(status, message, headers)
        self.code, self.param = code, param


class OpenAIParamError(ValueError):
    """A body check written in OpenAI's words, raised inside a validator: on `/v1` it is
    answered with its own `code` and `param` (`metadata.<key>`, where pydantic's location
    only names the field); elsewhere it is an ordinary validation error."""

    def __init__(self, code: str, param: str, message: str) -> None:
        super().__init__(message)
        self.code, self.param, self.message = code, param, message


def _openai_param_error(errors: list[Any]) -> OpenAIParamError | None:
    cause = (errors[0].get("ctx") or {}).get("error") if errors else None
    return cause if isinstance(cause, OpenAIParamError) else None


def domain_error_response(request: Request, exc: ChatBffError) -> JSONResponse:
    """The answer to one of our errors: its status, code, message and `Retry-After`."""
    if isinstance(exc, ProviderError):
        log_provider_failure(exc)
    return error_response(
        request,
        exc.status,
        exc.code,
        exc.message,
        headers=retry_after_header(exc),
        **exc.extra,
    )


def install_error_handlers(app: FastAPI) -> None:
    async def on_domain_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ChatBffError)
        return domain_error_response(request, exc)

    async def on_validation_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        detail = _validation_detail(list(exc.errors()))
        if any(d["type"] == "json_invalid" for d in detail):
            return error_response(
                request,
                400,
                "invalid_json",
                "The request body is not valid JSON.",
            )
        named = _openai_param_error(list(exc.errors()))
        if named is not None and _is_openai_surface(request):
            return error_response(request, 400, named.code, named.message, param=named.param)
        first = detail[0] if detail else {"loc": [], "msg": "invalid request"}
        loc = ".".join(str(x) for x in first["loc"] if x != "body")
        message = f"{loc}: {first['msg']}" if loc else str(first["msg"])
        if _is_openai_surface(request):
            # OpenAI answers a malformed request with 400, which its SDK maps to
            # BadRequestError; our native API keeps 422.
            return error_response(request, 400, "invalid_request", message, param=loc or None)
        return error_response(
            request, 422, "validation_error", message, param=loc or None, details=detail
        )

    async def on_http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = allowed_methods(request)
        code = {
            400: "invalid_request",  # a body FastAPI could not parse (JSON too deep, bad form)
            404: "not_found",
            405: "method_not_allowed",
            401: "unauthorized",
            403: "forbidden",
            413: "payload_too_large",
        }.get(exc.status_code, "http_error")
        message = exc.detail if isinstance(exc.detail, str) else "request failed"
        if isinstance(exc, RefusedBody):
            return error_response(
                request, exc.status_code, exc.code, message, headers=headers, param=exc.param
            )
        return error_response(request, exc.status_code, code, message, headers=headers)

    app.add_exception_handler(ChatBffError, on_domain_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    # Anything else reaches `RequestContextMiddleware`, which answers 500 with the
    # request id and keeps the connection (see app.api.middleware).


_METHODS = ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT")


def allowed_methods(request: Request) -> str:
    """Every method some route serves at the request's path, for a 405's `Allow`.

    Starlette's router answers 405 from the first route whose path matched, so its `Allow`
    named that route's methods alone: `GET` for `/api/conversations/{id}`, which also takes
    PATCH and DELETE (each method is a route of its own here). Asked of every route with
    each method in turn, through `matches` alone (FastAPI nests included routers)."""
    routes = request.app.router.routes
    return ", ".join(
        method
        for method in _METHODS
        if any(
            # HEAD is served as GET (app.api.middleware)
            route.matches({**request.scope, "method": "GET" if method == "HEAD" else method})[0]
            is Match.FULL
            for route in routes
        )
    )


def log_failure(exc: Unauthorized, request: Request) -> None:
    """The cause of a 401 for the operator; the credential itself is never logged."""
    logging.getLogger("chat_bff.auth").info(
        "authentication failed", extra={"reason": exc.reason, "path": request.url.path}
    )


def install_auth_error_handler(app: FastAPI) -> None:
    """The one 401 answer for every authentication failure."""

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
