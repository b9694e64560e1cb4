"""The OpenAPI document as the service really answers, not as FastAPI guesses.

FastAPI documents every validation failure as `422 HTTPValidationError` (`{"detail": [...]}`)
and knows nothing of the errors our handlers raise. A client generated from that document
would parse the wrong error body and miss the statuses it must handle, so `install_openapi`
post-processes the generated schema once:

- every error response carries our body: `ErrorResponse` on the native API,
  `OpenAIErrorResponse` on `/v1/*`, whose validation failures answer 400, not 422;
- each operation lists the statuses it can answer: 401 and 429 when it authenticates (the
  per-caller rate limit is checked there), 404 when it takes an id or a model, 413 when it
  takes a body, plus a `4XX` catch-all for the rest (e.g. 400 `invalid_request`);
- SSE answers document their events: the union a route names with
  `app.api.event_streams.event_stream` (e.g. `RunEvent`, one schema per native event,
  discriminated on `type`), else one generic `ServerSentEvent`; SSE-only answers lose
  FastAPI's empty JSON stand-in;
- the bearer JWT, `X-API-Key` and `?token=` (GET only) schemes are declared, so generated
  clients can send them.

`app.openapi_dump` calls `app.openapi()`, so the committed file gets the same treatment.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute, iter_route_contexts
from pydantic import BaseModel, ConfigDict, Field

from app.api.deps import get_caller, get_turn
from app.api.event_streams import EVENT_STREAMS, EventUnion
from app.api.openapi_names import untangle_names

_REF = "#/components/schemas/"
_METHODS = frozenset({"get", "put", "post", "delete", "patch", "options", "head", "trace"})


class ErrorBody(BaseModel):
    """What went wrong, machine-readable first (`code`), then for humans (`message`)."""

    model_config = ConfigDict(extra="allow")

    code: str = Field(description="Stable machine-readable code, e.g. `not_found`.")
    message: str = Field(description="Human-readable explanation; never contains secrets.")
    param: str | None = Field(default=None, description="The offending field, when one is.")
    details: list[dict[str, Any]] | None = Field(
        default=None, description="Validation errors: `loc`, `msg`, `type` for each."
    )


class ErrorResponse(BaseModel):
    """The one error body of the native API; extra keys (e.g. `active_run_id`) may appear."""

    error: ErrorBody = Field(description="The error.")


class OpenAIErrorBody(BaseModel):
    """OpenAI's error object, so the official SDK raises the right exception class."""

    message: str = Field(description="Human-readable explanation.")
    type: str = Field(description="OpenAI error type, e.g. `invalid_request_error`.")
    param: str | None = Field(description="The offending field, when one is.")
    code: str | None = Field(description="Machine-readable code, e.g. `model_not_found`.")


class OpenAIErrorResponse(BaseModel):
    """The error body of the OpenAI-compatible surface (`/v1/*`)."""

    error: OpenAIErrorBody = Field(description="The error.")


class ServerSentEvent(BaseModel):
    """One event of an SSE answer (read with EventSource); heartbeats are comments."""

    event: str | None = Field(
        default=None, description="Event name, e.g. `text_delta` (native vocabulary)."
    )
    data: str = Field(description="The payload: JSON (OpenAI's streams end with `[DONE]`).")
    id: str | None = Field(
        default=None, description="Sequence number in the run; send as Last-Event-ID."
    )
    retry: int | None = Field(default=None, description="Reconnection delay, milliseconds.")


_STATUS_TEXT = {
    400: "Bad request (`invalid_request`).",
    401: "Missing, invalid or expired credentials.",
    404: "No such resource or model (or not yours).",
    409: "Conflict with the resource's current state.",
    413: "Request body too large.",
    422: "The request failed validation.",
    429: "Rate limit or quota exceeded; see Retry-After.",
}


def install_openapi(app: FastAPI) -> None:
    """Make `app.openapi()` answer the post-processed document (built once, cached)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            generated = FastAPI.openapi(app)
            untangle_names(generated)
            app.openapi_schema = document_errors(generated, app)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def document_errors(schema: dict[str, Any], app: FastAPI) -> dict[str, Any]:
    """Rewrite FastAPI's generated `schema` in place (see the module docstring)."""
    components = schema.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    for model in (ErrorResponse, OpenAIErrorResponse, ServerSentEvent):
        generated = model.model_json_schema(ref_template=_REF + "{model}")
        schemas.update(generated.pop("$defs", {}))
        schemas[model.__name__] = generated
    _add_event_unions(schemas)
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    components["securitySchemes"] = {
        "bearerAuth": {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "JWT",
            "description": "A JWT; `sub` is the caller, `roles` their roles.",
        },
        "apiKey": {
            "type": "apiKey",
            "in": "header",
            "name": "X-API-Key",
            "description": "A service-to-service key created by an admin.",
        },
        "streamToken": {
            "type": "apiKey",
            "in": "query",
            "name": "token",
            "description": "For EventSource, which cannot send headers: a short-lived token "
            "from `POST /api/stream-tokens`, good for GET requests under its path.",
        },
    }
    authenticated = {(path, method) for path, method, route in _routes(app) if _auths(route)}
    for path, operations in schema.get("paths", {}).items():
        for method, operation in operations.items():
            if method in _METHODS:
                authed = (path, method) in authenticated
                _document_operation(path, method, operation, authed, schemas)
    return schema


def _document_operation(
    path: str,
    method: str,
    operation: dict[str, Any],
    authenticated: bool,
    schemas: dict[str, Any],
) -> None:
    openai = path.startswith("/v1/")
    ref = {"$ref": _REF + ("OpenAIErrorResponse" if openai else "ErrorResponse")}
    responses: dict[str, Any] = operation.setdefault("responses", {})
    takes_input = "requestBody" in operation or bool(operation.get("parameters"))
    responses.pop("422", None)
    wanted: list[int] = []
    if takes_input:
        wanted.append(400 if openai else 422)
    if authenticated:
        wanted += [401, 429]
        operation["security"] = [{"bearerAuth": []}, {"apiKey": []}]
        if method == "get":
            operation["security"].append({"streamToken": []})
    if "{" in path or _names_model(operation, schemas):
        wanted.append(404)
    if "requestBody" in operation:
        wanted.append(413)
    for code in wanted:
        responses.setdefault(str(code), {"description": _STATUS_TEXT[code]})
    if takes_input or authenticated:
        responses.setdefault("4XX", {"description": "Any other client error."})
    for status, response in responses.items():
        if status.startswith(("4", "5")):
            response["content"] = {"application/json": {"schema": ref}}
        else:
            _document_sse(response)


def _add_event_unions(schemas: dict[str, Any]) -> None:
    """Each event union and its frame as components, beside the models they reference. A
    model that is already a component (a part, a message) keeps FastAPI's rendering of
    it: both come from the same pydantic model and differ only in how defaults are spelled."""
    for name, union in EVENT_STREAMS.items():
        generated = union.adapter.json_schema(mode="serialization", ref_template=_REF + "{model}")
        for model, schema in generated.pop("$defs", {}).items():
            schemas.setdefault(model, schema)
        schemas[name] = {"description": union.description, **generated}
        schemas[name + "Frame"] = _frame(name, union, generated)


def _frame(name: str, union: EventUnion, generated: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = {
        "type": "string",
        "contentMediaType": "application/json",
        "contentSchema": {"$ref": _REF + name},
    }
    if union.end_marker is not None:
        data = {"anyOf": [data, {"const": union.end_marker}]}
    event: dict[str, Any] = {"type": "string", "const": "message"}
    about = "Absent: `data:`-only frames (an EventSource reads them as `message`)."
    if union.named:
        names = sorted(generated.get("discriminator", {}).get("mapping", {}))
        event = {"type": "string", "enum": names} if names else {"type": "string"}
        about = "The `event:` name (the event's `type`)."
    return {
        "description": f"One SSE frame of the stream; its `data:` is a `{name}` as JSON.",
        "type": "object",
        "properties": {
            "event": {**event, "description": about},
            "data": {**data, "description": f"A `{name}` as JSON."},
            "id": {"type": "string", "description": "Sequence number; send as Last-Event-ID."},
            "retry": {"type": "integer", "description": "Reconnection delay, milliseconds."},
        },
        "required": ["data"],
    }


def _document_sse(response: dict[str, Any]) -> None:
    """An answer that is SSE or JSON keeps both; one that is only SSE loses the `{}` that
    FastAPI adds for its default JSON response class. As OpenAPI 3.1 reads an event
    stream's `schema`, it describes one event: the route's event union, or a generic
    frame (`ServerSentEvent`) where the route names none."""
    content = response.get("content", {})
    if "text/event-stream" in content:
        ref = content["text/event-stream"].get("schema", {}).get("$ref", "")
        if ref.removeprefix(_REF).removesuffix("Frame") not in EVENT_STREAMS:
            content["text/event-stream"] = {"schema": {"$ref": _REF + "ServerSentEvent"}}
        if content.get("application/json") == {"schema": {}}:
            del content["application/json"]


def _names_model(operation: dict[str, Any], schemas: dict[str, Any]) -> bool:
    """A `model` query parameter or body field can name an unknown model: 404."""
    if any(p.get("name") == "model" for p in operation.get("parameters", [])):
        return True
    body = operation.get("requestBody", {}).get("content", {}).get("application/json", {})
    name = body.get("schema", {}).get("$ref", "").removeprefix(_REF)
    return "model" in schemas.get(name, {}).get("properties", {})


def _routes(app: FastAPI) -> Iterator[tuple[str, str, APIRoute]]:
    # Through `iter_route_contexts`: included routers are nodes of their own in the table.
    for context in iter_route_contexts(app.routes):
        route = context.original_route
        if isinstance(route, APIRoute) and isinstance(context.path_format, str):
            for method in context.methods or ():
                yield context.path_format, method.lower(), route


_AUTHENTICATING = (get_caller, get_turn)


def _auths(route: APIRoute) -> bool:
    def walk(dependant: Dependant) -> bool:
        # `get_turn` authenticates through `get_caller` (one dependency, not two).
        return dependant.call in _AUTHENTICATING or any(walk(d) for d in dependant.dependencies)

    return walk(route.dependant)
