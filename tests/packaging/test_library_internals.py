"""The libraries' private parts the service builds on, all present in the pinned versions.

A few hot paths (time to first token, memory per open stream, a persisted run) subclass
or read a library's underscored names. `constraints.txt` pins the versions they were
written against; when a pin moves (`python3 dev.py lock`), this test names each private
part that is gone, and the module to re-read against the new release, instead of a
failure somewhere in the middle of a stream. Where the code can do without one, it falls
back to the library's public path (`app/api/sse_lean.py`, `app/api/direct_handler.py`);
this test still fails, so the fallback is a choice and not a surprise. uvicorn's
protocol internals (`app/api/http_protocol.py`) are checked by driving the protocol
(`tests/api/test_http_protocol.py`).
"""

from __future__ import annotations

import importlib

import pytest

# (module, attribute path inside it, the module of ours that relies on it)
INTERNALS: list[tuple[str, str, str]] = [
    ("h11._headers", "normalize_and_validate", "app/providers/connection.py"),
    ("h11._headers", "Headers", "app/providers/connection.py"),
    ("h11._headers", "CONTENT_LENGTH_MAX_DIGITS", "app/providers/connection.py"),
    ("httpcore2._async.http11", "HTTPConnectionState.IDLE", "app/providers/connection.py"),
    (
        "httpcore2",
        "AsyncHTTP11Connection._receive_response_headers",
        "app/providers/connection.py",
    ),
    ("httpcore2", "AsyncHTTP11Connection._response_closed", "app/providers/connection.py"),
    ("httpcore2", "AsyncHTTP11Connection._send_event", "app/providers/connection.py"),
    ("httpcore2", "AsyncHTTP11Connection._receive_event", "app/providers/connection.py"),
    ("httpcore2", "AsyncHTTPConnection._connect", "app/providers/connection.py"),
    ("httpcore2._utils", "is_socket_readable", "app/providers/network.py"),
    ("openai._models", "FinalRequestOptions", "app/providers/openai_client.py"),
    ("openai._utils._json", "_CustomEncoder", "app/providers/openai_client.py"),
    ("openai", "AsyncOpenAI._build_request", "app/providers/openai_client.py"),
    ("openai", "AsyncOpenAI._process_response", "app/providers/openai_client.py"),
    ("openai._constants", "RAW_RESPONSE_HEADER", "app/providers/openai_client.py"),
    ("anthropic", "AsyncAnthropic._should_retry", "app/providers/anthropic.py"),
    ("aiosqlite", "Connection._execute", "app/store/sqlite_driver.py, sqlite_turns.py"),
    ("sse_starlette.sse", "_ensure_watcher_started_on_this_loop", "app/api/sse_lean.py"),
    ("sse_starlette.sse", "_get_shutdown_state", "app/api/sse_lean.py"),
    ("sse_starlette.sse", "EventSourceResponse._stream_response", "app/api/sse_lean.py"),
    ("sse_starlette.sse", "EventSourceResponse._send_with_timeout", "app/api/sse_lean.py"),
    ("fastapi.telemetry._api", "_get_request_telemetry", "app/api/direct_handler.py"),
    ("fastapi.routing", "_effective_route_context_var", "app/api/routing.py"),
    ("fastapi.routing", "_FASTAPI_SCOPE_KEY", "app/api/known_routes.py"),
    ("fastapi.middleware.asyncexitstack", "AsyncExitStackMiddleware", "app/api/known_routes.py"),
    ("uvicorn.protocols.http.httptools_impl", "HttpToolsProtocol", "app/api/http_protocol.py"),
    ("mcp.shared._httpx_utils", "create_mcp_http_client", "app/mcp/server.py"),
]


def _resolve(module: str, path: str) -> object:
    found: object = importlib.import_module(module)
    for name in path.split("."):
        found = getattr(found, name)
    return found


@pytest.mark.parametrize(("module", "path", "user"), INTERNALS)
def test_the_pinned_release_has_the_private_part(module: str, path: str, user: str) -> None:
    try:
        _resolve(module, path)
    except (ImportError, AttributeError) as exc:
        pytest.fail(f"{module}.{path} is gone ({exc}): re-read {user} against this release")


def test_the_histogram_values_the_metrics_add_to() -> None:
    # Made in __init__, so not on the class (app/observability/metrics.py, `_observe`).
    from prometheus_client import CollectorRegistry, Histogram

    histogram = Histogram("probe_seconds", "probe", registry=CollectorRegistry())
    for name in ("_sum", "_buckets", "_upper_bounds"):
        assert hasattr(histogram, name), f"Histogram.{name} is gone: re-read metrics.py"


def test_the_scope_entries_the_known_routes_copy() -> None:
    # app/api/known_routes.py keeps what the routing layers put in the scope, by name.
    import inspect

    from fastapi import routing
    from fastapi.middleware.asyncexitstack import AsyncExitStackMiddleware

    from app.api import known_routes

    assert routing._FASTAPI_SCOPE_KEY == "fastapi", "re-read app/api/known_routes.py"
    context_name = inspect.signature(AsyncExitStackMiddleware).parameters["context_name"]
    assert context_name.default == known_routes._STACK_KEY, "re-read app/api/known_routes.py"
    handler = inspect.getsource(routing.request_response)
    for key in ("fastapi_inner_astack", "fastapi_function_astack"):
        assert key in handler and key in known_routes._FRESH, "re-read app/api/known_routes.py"
