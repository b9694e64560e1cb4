"""Routers whose request bodies enter the service as valid text.

JSON may carry what no encoder or database accepts: a lone UTF-16 surrogate (`"\\ud800"`)
or NUL (`"\\u0000"`). Every route made by `api_router` reads its JSON body through
`app.domain.text.valid_json`, so such characters become U+FFFD before any model
validates them, and a message that carries one is stored, streamed and reloaded the same.

Python's parser also takes `NaN`, `Infinity` and `-Infinity`, which are not JSON: Postgres
JSONB refuses them (a client tool's schema or a tool result holding one was a 500 at the
run's first write) and no encoder may send them back. They are refused as the parse error
they are (`app.domain.jsontext`), so the client gets the 400 `invalid_json` of any bad body.

The stateless chat routes take a body past `MAX_BODY_BYTES` so that files can come inline
(data URLs), and only for that: a body whose JSON besides its inline files is still past
the cap is a 413 before it is parsed. Reading a request costs time in proportion to its
messages and parts, all of it on the event loop, so 11 MB of tiny messages held every
stream of the process for some 20 seconds.

A turn's history is counted as soon as the body is parsed (in C), before anything walks or
validates it: a top-level `messages` (or Responses `input`) list longer than
`MAX_MESSAGES` (default 2048, OpenAI's own cap on Chat Completions messages) is a 400
`array_above_max_length` naming it, in OpenAI's words. Within `MAX_BODY_BYTES` some 33,000
tiny messages fit, and reading them held the event loop for most of a second. The content
parts of all its messages together are counted too: past `MAX_CONTENT_PARTS` (default
8192, four a message at the message cap) a 400 `content_parts_above_max` naming the list,
since 2,048 messages of 17 tiny text parts (just under 1 MB) held the loop for 0.5 s and
more (each part validated twice and built into our own part).
A body larger than `OFF_LOOP_BYTES` (256 KiB) is parsed and checked in a worker thread, so
the process goes on answering its other requests meanwhile; near the caps that read is a
quarter of the time the loop was held (validation and translation are the rest).

A body nested deeper than `MAX_DEPTH` is a 400 `invalid_request` saying so: far beyond any
real tool schema or payload, and well inside what every later encoder of it can write; also
one so deep that Python's parser gives out (a thousand levels), which FastAPI answered with
a vague "error parsing the body". So are bytes that are not UTF-8 and an integer of more
digits than Python converts (4,300): the 400 `invalid_json` of any bad body, not that one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

import anyio.to_thread
from fastapi import APIRouter, HTTPException, Request, Response
from fastapi import routing as fastapi_routing
from fastapi.routing import APIRoute

from app.api.direct_handler import direct_handler, direct_shape
from app.api.errors import RefusedBody
from app.api.known_routes import known_route
from app.domain import jsontext
from app.domain.text import json_text_valid, valid_json
from app.translate.data_url import inline_file_chars

MAX_DEPTH = jsontext.MAX_DEPTH
HISTORY_FIELDS = ("messages", "input")  # the top-level lists a turn's history comes in
PART_FIELDS = ("content", "parts")  # a message's list of content parts
OFF_LOOP_BYTES = 256 * 1024  # a larger body is parsed and checked in a worker thread
TOO_DEEP = f"The JSON body nests deeper than {MAX_DEPTH} levels."


def content_parts(history: list[Any]) -> int:
    """The content parts of all the messages of a history (a message's `content` or, on
    the native UI route, `parts` list), counted without reading them."""
    total = 0
    for message in history:
        if isinstance(message, dict):
            for field in PART_FIELDS:
                parts = message.get(field)
                if isinstance(parts, list):
                    total += len(parts)
    return total


class ValidTextRequest(Request):
    _body_error: Exception | None = None

    async def body(self) -> bytes:
        # A second read (FastAPI's handler after `direct_handler`'s) sees the first's error.
        if self._body_error is not None:
            raise self._body_error
        try:
            return await super().body()
        except Exception as exc:
            self._body_error = exc
            raise

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            if len(body) > OFF_LOOP_BYTES:  # held the loop for tens of milliseconds
                self._json = await anyio.to_thread.run_sync(self._parsed, body)
            else:
                self._json = self._parsed(body)
        return self._json

    def _parsed(self, body: bytes) -> Any:
        """The body's JSON, capped, checked and made valid text (see the module doc)."""
        try:
            text = jsontext.decode(body)
            self._within_cap(len(body), text)
            value = jsontext.loads(text)
        except RecursionError:
            raise HTTPException(400, TOO_DEEP) from None
        except json.JSONDecodeError:
            raise
        except ValueError as exc:  # not UTF-8; an integer of too many digits
            # FastAPI answers a JSONDecodeError as invalid JSON, any other error vaguely.
            raise json.JSONDecodeError(str(exc), "", 0) from exc
        self._within_history_cap(value)
        if jsontext.may_nest_deeper(text, MAX_DEPTH) and jsontext.depth(value) > MAX_DEPTH:
            # FastAPI passes an HTTPException through; any other error becomes a vague 400.
            raise HTTPException(400, TOO_DEEP)
        # Most bodies hold no string to fix: the text says so without a walk.
        return value if json_text_valid(text) else valid_json(value)

    def _within_history_cap(self, value: Any) -> None:
        cap: int | None = getattr(self.app.state, "max_messages", None)
        parts_cap: int | None = getattr(self.app.state, "max_content_parts", None)
        if not isinstance(value, dict):
            return
        for field in HISTORY_FIELDS:
            history = value.get(field)
            if not isinstance(history, list):
                continue
            if cap is not None and len(history) > cap:
                raise RefusedBody(
                    400,
                    "array_above_max_length",
                    field,
                    f"Invalid '{field}': array too long. Expected an array with maximum "
                    f"length {cap}, but got an array with length {len(history)} instead.",
                )
            parts = content_parts(history)
            if parts_cap is not None and parts > parts_cap:
                raise RefusedBody(
                    400,
                    "content_parts_above_max",
                    field,
                    f"Invalid '{field}': too many content parts. Expected at most {parts_cap} "
                    f"content parts across all messages, but got {parts} instead.",
                )

    def _within_cap(self, size: int, text: str) -> None:
        cap: int | None = getattr(self.app.state, "max_body_bytes", None)
        if cap is not None and size > cap and size - inline_file_chars(text) > cap:
            raise HTTPException(
                413, f"Request body exceeds the limit of {cap} bytes (inline files aside)."
            )


def _effective_route(route: APIRoute) -> APIRoute | None:
    """The route as FastAPI's handler sees it (an included route's prefix, dependencies).

    Read from FastAPI's internals (the version is pinned in constraints.txt); a FastAPI
    without them gives None, and FastAPI's own handler serves every request."""
    context_var = getattr(fastapi_routing, "_effective_route_context_var", None)
    if context_var is None:
        return None
    context = context_var.get()
    if context is None or getattr(context, "original_route", None) is not route:
        return route
    effective: APIRoute = context
    return effective


class ValidTextRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = fallback = super().get_route_handler()
        route = _effective_route(self)
        embed = getattr(route, "_embed_body_fields", None)
        if (
            route is not None
            and embed is not None
            and direct_shape(route.dependant, route.body_field, embed)
        ):
            handler = direct_handler(
                route.dependant, route.body_field, route.dependency_overrides_provider, handler
            )
        if handler is fallback:

            async def valid_text_handler(request: Request) -> Response:
                return await handler(ValidTextRequest(request.scope, request.receive))

            return valid_text_handler

        async def direct_text_handler(request: Request) -> Response:
            # Its later requests may skip the routing layers (`app.api.known_routes`).
            known_route(request.scope)
            return await handler(ValidTextRequest(request.scope, request.receive))

        return direct_text_handler


def api_router(**kwargs: Any) -> APIRouter:
    """An `APIRouter` whose routes read JSON bodies as valid text."""
    return APIRouter(route_class=ValidTextRoute, **kwargs)
