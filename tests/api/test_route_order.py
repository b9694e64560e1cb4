"""Every operation is served by its own route, whatever order the routers are matched in.

The app matches a request against its routes in the order the routers were included, and
the first route whose path and method fit serves it: a route placed before another with an
overlapping path would take that one's requests. The routers' order is a speed choice (the
busiest first), so this pins that no operation is shadowed by a route before it.
"""

from __future__ import annotations

import re

from fastapi.routing import APIRoute, RouteContext, iter_route_contexts
from starlette.routing import compile_path

from app.main import create_app
from app.settings import Settings

_PARAM = re.compile(r"\{[^}]+\}")


def _operations() -> list[RouteContext]:
    app = create_app(Settings(_env_file=None, environment="test"))
    return [c for c in iter_route_contexts(app.routes) if isinstance(c.original_route, APIRoute)]


def test_no_operation_is_shadowed_by_a_route_matched_before_it() -> None:
    operations = _operations()
    patterns = [compile_path(str(c.path))[0] for c in operations]
    shadowed = []
    for context in operations:
        path = _PARAM.sub("x1", str(context.path))
        for method in sorted((context.methods or set()) - {"HEAD"}):
            first = next(
                other
                for other, pattern in zip(operations, patterns, strict=True)
                if method in (other.methods or set()) and pattern.match(path)
            )
            if first is not context:
                shadowed.append(f"{method} {context.path} is served by {first.path}")
    assert len(operations) > 50, "the route table was not read"
    assert shadowed == []


def test_the_chat_turns_are_matched_first() -> None:
    paths = [str(c.path) for c in _operations()]
    assert paths.index("/api/chat") < 2
    assert paths.index("/v1/chat/completions") < 4
