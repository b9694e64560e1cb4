"""Routers whose request bodies enter the service as valid text.

JSON may carry what no encoder or database accepts: a lone UTF-16 surrogate (`"\\ud800"`)
or NUL (`"\\u0000"`). Every route made by `api_router` reads its JSON body through
`app.domain.text.valid_json`, so such characters become U+FFFD before any model
validates them, and a message that carries one is stored, streamed and reloaded the same.

Python's parser also takes `NaN`, `Infinity` and `-Infinity`, which are not JSON: Postgres
JSONB refuses them (a client tool's schema or a tool result holding one was a 500 at the
run's first write) and no encoder may send them back. They are refused as the parse error
they are (`app.domain.jsontext`), so the client gets the 400 `invalid_json` of any bad body.

A body nested deeper than `MAX_DEPTH` is a 400 `invalid_request` saying so: far beyond any
real tool schema or payload, and well inside what every later encoder of it can write.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import APIRouter, HTTPException, Request, Response
from fastapi.routing import APIRoute

from app.domain import jsontext
from app.domain.text import valid_json

MAX_DEPTH = 100


class ValidTextRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            value = jsontext.loads(await self.body())
            if jsontext.depth(value) > MAX_DEPTH:
                # FastAPI passes an HTTPException through; any other error becomes a vague 400.
                raise HTTPException(400, f"The JSON body nests deeper than {MAX_DEPTH} levels.")
            self._json = valid_json(value)
        return self._json


class ValidTextRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def valid_text_handler(request: Request) -> Response:
            return await handler(ValidTextRequest(request.scope, request.receive))

        return valid_text_handler


def api_router(**kwargs: Any) -> APIRouter:
    """An `APIRouter` whose routes read JSON bodies as valid text."""
    return APIRouter(route_class=ValidTextRoute, **kwargs)
