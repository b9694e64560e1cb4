"""A direct-path route's request sent to its route past the routing layers, once the
route is known.

Why: under our middlewares every request passes Starlette's exception middleware (a
`Request` and two closures), FastAPI's exit-stack middleware and FastAPI's router, which
tries each included router in turn (setting and restoring its scope entries around each
try) and matches the chosen one's routes again before the route runs. For `/api/chat`
and `/v1/chat/completions` that was the largest part left of the path from a request to
its upstream write that is not the request's own work (`bench.callgrind v1 --cprofile`).

How: the first request of a method and path goes through the layers. If it reaches a
route that asks to be known (`app.api.routing`: the routes `app.api.direct_handler`
serves, none with path parameters), the route reports the scope it was given, and the
entries the layers put there (the router, the route, its endpoint and path parameters,
FastAPI's routing entries, the exception handlers the route's own wrapper answers errors
with) are kept. A later request of the same method, root path and path gets those
entries (dicts copied), a fresh exit stack where FastAPI's middleware put one, and goes
to the route's `handle`: what the route then does is what it did under the layers.

What the layers did besides is not lost: a route's exception is answered by the route's
own wrapper with the same handlers, and what that wrapper re-raises the exception
middleware re-raised too. Left to the layers: a request OpenTelemetry traces (the router
names its route on the span), any request whose layers set an entry not listed here or
change one that was there (then nothing is kept), and every request when the layers
under our middleware are not the three this was written against.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

from fastapi.middleware.asyncexitstack import AsyncExitStackMiddleware
from fastapi.routing import APIRouter
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Receive, Scope, Send

PROBE_KEY = "chat_bff.known_routes"
_STACK_KEY = "fastapi_middleware_astack"
# What the layers put in the scope, kept and given to later requests.
_KEPT = ("router", "route", "endpoint", "path_params", "fastapi", "starlette.exception_handlers")
# What FastAPI makes afresh for each request (the route's own two, and the middleware's).
_FRESH = frozenset({_STACK_KEY, "fastapi_inner_astack", "fastapi_function_astack"})
_KNOWN = frozenset(_KEPT) | _FRESH
_TRACED = "fastapi.telemetry"


def _layers_as_written(app: ASGIApp) -> bool:
    """The layers under our middleware are Starlette's exception middleware, FastAPI's
    exit-stack middleware and FastAPI's router, in that order."""
    inner = getattr(app, "app", None)
    return (
        type(app) is ExceptionMiddleware
        and type(inner) is AsyncExitStackMiddleware
        and isinstance(getattr(inner, "app", None), APIRouter)
    )


class _Known:
    __slots__ = ("entries", "route")

    def __init__(self, route: BaseRoute, entries: dict[str, Any]) -> None:
        self.route = route
        self.entries = entries

    def scope_entries(self) -> dict[str, Any]:
        entries = dict(self.entries)
        entries["fastapi"] = dict(entries["fastapi"])
        entries["path_params"] = {}
        return entries


class _Probe:
    """The scope as the layers got it, to find what they added by the time a route runs."""

    __slots__ = ("before", "key", "routes")

    def __init__(self, routes: KnownRoutes, key: tuple[str, str, str], scope: Scope) -> None:
        self.routes = routes
        self.key = key
        self.before = dict(scope)

    def learn(self, scope: Scope) -> None:
        before = self.before
        added = scope.keys() - before.keys()
        route = scope.get("route")
        if (
            added <= _KNOWN
            and _KNOWN.isdisjoint(before)
            and all(key in added for key in ("route", "fastapi", "starlette.exception_handlers"))
            and isinstance(route, BaseRoute)
            and isinstance(scope["fastapi"], dict)
            and scope.get("path_params", {}) == {}
            and all(scope.get(key) is value for key, value in before.items())
        ):
            entries = {key: scope[key] for key in _KEPT if key in added}
            entries.setdefault("path_params", {})
            self.routes.known[self.key] = _Known(route, entries)


class KnownRoutes:
    """The app under our body guard (the layers), with the known routes' shortcut."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.enabled = _layers_as_written(app)
        self.known: dict[tuple[str, str, str], _Known] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.enabled or scope["type"] != "http" or _TRACED in scope:
            await self.app(scope, receive, send)
            return
        key = (scope["method"], scope.get("root_path", ""), scope["path"])
        known = self.known.get(key)
        if known is None:
            if scope["method"] != "POST":  # the routes that ask to be known take a body
                await self.app(scope, receive, send)
                return
            scope[PROBE_KEY] = _Probe(self, key, scope)
            try:
                await self.app(scope, receive, send)
            finally:
                scope.pop(PROBE_KEY, None)
            return
        scope.update(known.scope_entries())
        async with AsyncExitStack() as stack:  # as FastAPI's middleware: files it closes
            scope[_STACK_KEY] = stack
            await known.route.handle(scope, receive, send)


def known_route(scope: Scope) -> None:
    """Called by a route that may be known, with the scope it was given."""
    probe = scope.pop(PROBE_KEY, None)
    if isinstance(probe, _Probe):
        probe.learn(scope)
