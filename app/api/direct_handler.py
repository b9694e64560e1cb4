"""A route's request handled without FastAPI's generic solver, when nothing needs it.

FastAPI's handler, for every request, parses the content type with `email.message`, asks
OpenTelemetry whether a request is traced, and solves the route's dependencies as a tree
(cache keys, scope checks, query parameters and cookies read for each level) before it
validates the body. For a route of the simplest shape (one JSON body model, the request,
dependencies that each take only the request, a `Response` returned) that is a fifth of
what `/api/chat` and `/v1/chat/completions` cost before their first token. Path parameters
of plain text (`str`, no constraint: their validation can refuse or change nothing) are
taken from the path as FastAPI would give them, so a conversation's turn
(`POST /api/conversations/{id}/messages`) goes this way too.

`direct_handler` serves such a route's ordinary request itself: the body read and parsed,
validated by the route's own field, each dependency called with the request, the endpoint
called with what FastAPI would have given it. Anything else goes to FastAPI's handler, so the
answer is FastAPI's: a body that is not JSON or does not validate, another content type,
dependency overrides, a traced request (OpenTelemetry). A dependency's error propagates
as it would from FastAPI's solver, before the body is validated, as there.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi import params as fastapi_params
from fastapi.dependencies.models import Dependant

Handler = Callable[[Request], Coroutine[Any, Any, Response]]


def _telemetry_probe() -> Callable[[], object] | None:
    """FastAPI's "is this request traced" (internal; the version is pinned in constraints.txt).
    None when a FastAPI lacks it: then FastAPI's handler serves every request."""
    try:
        from fastapi.telemetry._api import _get_request_telemetry
    except ImportError:
        return None
    probe: Callable[[], object] = _get_request_telemetry
    return probe


def _plain_text(field: Any) -> bool:
    """A path parameter FastAPI passes on as the path's text: a `str` with no constraint,
    so its validation can refuse nothing and change nothing."""
    info = field.field_info
    return info.annotation is str and not info.metadata and field.alias == field.name


def _request_alone(dependant: Dependant, *, path: bool = False) -> bool:
    """Takes the request and no other parameter FastAPI would read or make for it (the
    body and sub-dependencies are the callers' to check); with `path`, also path
    parameters of plain text (`_plain_text`)."""
    return (
        dependant.request_param_name is not None
        and all(path and _plain_text(p) for p in dependant.path_params)
        and not (dependant.query_params or dependant.header_params or dependant.cookie_params)
        and dependant.websocket_param_name is None
        and dependant.http_connection_param_name is None
        and dependant.response_param_name is None
        and dependant.background_tasks_param_name is None
        and dependant.security_scopes_param_name is None
    )


def _takes_only_request(dependant: Dependant) -> bool:
    return (
        _request_alone(dependant)
        and not (dependant.body_params or dependant.dependencies)
        and not dependant.own_oauth_scopes
        and dependant.scope is None
        and dependant.concurrency is None
        and dependant.name is not None
        and inspect.iscoroutinefunction(dependant.call)
    )


def _returns_response(call: Callable[..., Any]) -> bool:
    try:
        returned = typing.get_type_hints(call).get("return")
    except Exception:  # noqa: BLE001  # an annotation that does not resolve: FastAPI decides
        return False
    return isinstance(returned, type) and issubclass(returned, Response)


def direct_shape(dependant: Dependant, body_field: Any, embed_body_fields: bool) -> bool:
    """Whether a route is of the shape `direct_handler` serves."""
    call = dependant.call
    return (
        call is not None
        and inspect.iscoroutinefunction(call)
        and _returns_response(call)
        and body_field is not None
        and not embed_body_fields
        and len(dependant.body_params) == 1
        and not isinstance(body_field.field_info, fastapi_params.Form)
        and _request_alone(dependant, path=True)
        and all(_takes_only_request(d) for d in dependant.dependencies)
    )


def _json_content(request: Request) -> bool:
    """A content type FastAPI reads as JSON, in its simplest spellings (others go to it)."""
    value = request.headers.get("content-type")
    if value is None:
        return False
    media = value.partition(";")[0].strip().lower()
    return media == "application/json"


def direct_handler(
    dependant: Dependant,
    body_field: Any,
    overrides: Any,
    fallback: Handler,
) -> Handler:
    """`fallback` (FastAPI's handler) for what the direct path does not take. The request
    must give the fallback what it gave here: its body cached, or the same error again
    (`app.api.routing.ValidTextRequest`)."""
    call = dependant.call
    assert call is not None
    traced = _telemetry_probe()
    if traced is None:
        return fallback
    body_name = dependant.body_params[0].name
    path_names = [p.name for p in dependant.path_params]
    request_name = dependant.request_param_name
    dependencies: list[tuple[str, Callable[[Request], Coroutine[Any, Any, Any]], bool]] = [
        (d.name, d.call, d.use_cache)
        for d in dependant.dependencies
        if d.name is not None and d.call is not None  # always so: `direct_shape`
    ]

    async def handle(request: Request) -> Response:
        if (
            traced() is not None
            or getattr(overrides, "dependency_overrides", None)
            or not _json_content(request)
        ):
            return await fallback(request)
        try:
            value = await request.json()
        except Exception:  # noqa: BLE001  # FastAPI's own answer to the same body
            return await fallback(request)
        # Validation has no effects, so it may go before the dependencies (which count the
        # request against its caller's rate): a body FastAPI refuses goes to FastAPI, which
        # calls them once, then refuses it.
        body, errors = body_field.validate(value, {}, loc=("body",))
        if errors:
            return await fallback(request)
        values: dict[str, Any] = {body_name: body}
        if path_names:
            given = request.path_params
            for name in path_names:
                values[name] = given[name]
        solved: dict[Any, Any] = {}  # one call a request per dependency, as FastAPI caches
        for name, dependency, cached in dependencies:
            if cached and dependency in solved:
                values[name] = solved[dependency]
            else:
                values[name] = solved[dependency] = await dependency(request)
        if request_name is not None:
            values[request_name] = request
        response: Response = await call(**values)
        return response

    return handle
