"""Request ids, JSON access logs, Prometheus metrics, CORS."""

from __future__ import annotations

import json
import logging
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from app.domain.redaction import redact
from app.observability.logging import JsonFormatter, RedactionFilter, bind_run
from app.observability.metrics import Metrics
from tests.auth.tokens import sqlite_settings
from tests.canary import capture_logs
from tests.fakes.db import MakeApi
from tests.support.asgi_stream import body_then_wait, post_scope


async def test_a_sane_request_id_is_echoed(make_api: MakeApi, tmp_path: Path) -> None:
    async with make_api(sqlite_settings(tmp_path)) as api:
        response = await api.get("/api/models", headers={"X-Request-ID": "front-123.abc"})
    assert response.headers["x-request-id"] == "front-123.abc"


@pytest.mark.parametrize("incoming", [None, "", "has spaces", "x" * 200, "<script>"])
async def test_a_missing_or_insane_request_id_is_replaced(
    make_api: MakeApi, tmp_path: Path, incoming: str | None
) -> None:
    headers = {} if incoming is None else {"X-Request-ID": incoming}
    async with make_api(sqlite_settings(tmp_path)) as api:
        response = await api.get("/api/models", headers=headers)
    generated = response.headers["x-request-id"]
    assert generated != incoming
    assert len(generated) == 32 and generated.isalnum()


async def test_errors_carry_the_request_id_too(make_api: MakeApi, tmp_path: Path) -> None:
    async with make_api(sqlite_settings(tmp_path)) as api:
        response = await api.get("/api/nowhere", headers={"X-Request-ID": "rid-404"})
    assert response.status_code == 404
    assert response.headers["x-request-id"] == "rid-404"


async def test_an_unexpected_error_is_a_500_with_the_request_id_and_a_body(
    make_api: MakeApi, tmp_path: Path
) -> None:
    async def boom() -> None:
        raise RuntimeError("a bug")

    async with make_api(sqlite_settings(tmp_path)) as api:
        api.app.add_api_route("/api/boom", boom)
        with capture_logs() as logs:
            failed = await api.get("/api/boom", headers={"X-Request-ID": "req-500"})
        after = await api.get("/api/models")

    assert failed.status_code == 500
    assert failed.headers["x-request-id"] == "req-500"
    assert failed.json()["error"] == {"code": "internal_error", "message": "Internal server error."}
    assert any("unhandled error" in line for line in logs.lines)
    assert after.status_code == 200  # the same client goes on


async def test_the_access_log_is_a_json_line_with_the_request_id(
    make_api: MakeApi, tmp_path: Path
) -> None:
    with capture_logs() as logs:
        async with make_api(sqlite_settings(tmp_path, log_json=True)) as api:
            await api.get(
                "/api/models", params={"q": "secret-ish"}, headers={"X-Request-ID": "rid-1"}
            )
    access = [json.loads(line) for line in logs.lines if '"chat_bff.access"' in line]
    entry = next(e for e in access if e.get("request_id") == "rid-1")
    assert entry["message"] == "GET /api/models 200"
    assert entry["route"] == "/api/models"
    assert entry["status"] == 200
    assert entry["user_id"] == "local"
    assert "secret-ish" not in json.dumps(entry)


def test_log_lines_carry_the_run_id_inside_bind_run() -> None:
    record = logging.LogRecord("chat_bff.runs", logging.INFO, __file__, 1, "step", None, None)
    with bind_run("run_42"):
        line = json.loads(JsonFormatter().format(record))
    assert line["run_id"] == "run_42"


@pytest.mark.parametrize(
    "text",
    [
        "key sk-proj-abcdefghijklmnop1234",
        "header Authorization: Bearer abc.def-ghijklmnop",
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl",
        "our key cbff_0123456789abcdefghij",
        "url https://x.test/?api_key=hunter2hunter2",
        'json {"password": "hunter2hunter2"}',
    ],
)
def test_redaction_removes_key_shaped_text(text: str) -> None:
    secretish = text.split()[-1].strip('"}')
    assert secretish not in redact(text)


def test_redaction_filter_scrubs_extras_and_configured_values() -> None:
    record = logging.LogRecord(
        "x", logging.INFO, __file__, 1, "connecting with %s", ("plainsecretvalue",), None
    )
    record.api_key = "anything"
    record.detail = {"nested": "plainsecretvalue", "token": "t"}
    RedactionFilter(["plainsecretvalue"]).filter(record)
    line = JsonFormatter().format(record)
    assert "plainsecretvalue" not in line
    assert "anything" not in line
    assert json.loads(line)["message"] == "connecting with [redacted]"


async def test_metrics_expose_the_named_series(make_api: MakeApi, tmp_path: Path) -> None:
    async with make_api(sqlite_settings(tmp_path)) as api:
        await api.get("/api/models")
        await api.get("/api/conversations/conv_missing")
        metrics: Metrics = api.app.state.metrics
        metrics.run_started()
        metrics.observe_ttft("scripted", 0.12)
        metrics.observe_provider_call("scripted", "scripted", 0.5)
        metrics.provider_error("openai", "gpt-4o-mini", "provider_timeout")
        metrics.add_tokens("scripted", input_tokens=10, output_tokens=3)
        metrics.tool_call("search", "success")
        metrics.run_finished("completed", 1.5)
        response = await api.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    text = response.text
    for line in [
        'chatbff_http_requests_total{method="GET",route="/api/models",status="200"} 1.0',
        'chatbff_http_requests_total{method="GET",route="/api/conversations/{conversation_id}",'
        'status="404"} 1.0',
        "chatbff_active_streams 0.0",
        "chatbff_active_runs 0.0",
        'chatbff_run_duration_seconds_count{status="completed"} 1.0',
        'chatbff_time_to_first_token_seconds_count{model="scripted"} 1.0',
        'chatbff_provider_latency_seconds_count{model="scripted",provider="scripted"} 1.0',
        'chatbff_provider_errors_total{code="provider_timeout",model="gpt-4o-mini",'
        'provider="openai"} 1.0',
        'chatbff_tokens_input_total{model="scripted"} 10.0',
        'chatbff_tokens_output_total{model="scripted"} 3.0',
        'chatbff_tool_calls_total{outcome="success",tool="search"} 1.0',
    ]:
        assert line in text, line


async def test_a_started_service_exposes_each_models_and_run_status_series_at_zero(
    make_api: MakeApi, tmp_path: Path
) -> None:
    """Made at start-up, not by a burst's first call (see `Metrics.prepare`): scrapes see
    them from the start."""
    async with make_api(sqlite_settings(tmp_path)) as api:
        text = (await api.get("/metrics")).text
    model = 'model="scripted-demo"'
    for line in [
        f"chatbff_time_to_first_token_seconds_count{{{model}}} 0.0",
        f'chatbff_provider_latency_seconds_count{{{model},provider="scripted"}} 0.0',
        f"chatbff_tokens_input_total{{{model}}} 0.0",
        f"chatbff_tokens_output_total{{{model}}} 0.0",
        *(
            f'chatbff_run_duration_seconds_count{{status="{status}"}} 0.0'
            for status in ("cancelled", "completed", "failed", "interrupted")
        ),
    ]:
        assert line in text, line


async def test_unmatched_paths_share_one_label(make_api: MakeApi, tmp_path: Path) -> None:
    async with make_api(sqlite_settings(tmp_path)) as api:
        for n in range(3):
            await api.get(f"/random/{n}")
        text = (await api.get("/metrics")).text
    assert 'route="unmatched",status="404"} 3.0' in text
    assert "/random/" not in text


async def test_sse_responses_count_as_active_streams_while_open(
    make_api: MakeApi, tmp_path: Path
) -> None:
    body = json.dumps({"messages": [{"role": "user", "content": "hi"}], "stream": True})
    scope = post_scope("/api/chat")
    receive = body_then_wait(body.encode())

    seen_during: list[str] = []
    async with make_api(sqlite_settings(tmp_path)) as api:
        metrics: Metrics = api.app.state.metrics

        async def send(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.body" and not seen_during:
                seen_during.append(metrics.render()[0].decode())

        with anyio.fail_after(10):
            await api.app(scope, receive, send)
        after = metrics.render()[0].decode()
    assert "chatbff_active_streams 1.0" in seen_during[0]
    assert "chatbff_active_streams 0.0" in after


async def test_two_apps_keep_separate_registries(make_api: MakeApi, tmp_path: Path) -> None:
    async with make_api(sqlite_settings(tmp_path)) as first:
        await first.get("/api/models")
        async with make_api(sqlite_settings(tmp_path / "..")) as second:
            text = (await second.get("/metrics")).text
    assert 'route="/api/models"' not in text


async def test_cors_allows_only_configured_origins(make_api: MakeApi, tmp_path: Path) -> None:
    settings = sqlite_settings(tmp_path, cors_origins=["https://chat.example"])
    preflight = {"Access-Control-Request-Method": "POST"}
    async with make_api(settings) as api:
        allowed = await api.options(
            "/api/chat", headers={"Origin": "https://chat.example", **preflight}
        )
        refused = await api.options(
            "/api/chat", headers={"Origin": "https://evil.example", **preflight}
        )
        simple = await api.get("/api/models", headers={"Origin": "https://chat.example"})
    assert allowed.headers["access-control-allow-origin"] == "https://chat.example"
    assert "access-control-allow-origin" not in refused.headers
    assert "x-request-id" in simple.headers["access-control-expose-headers"].lower()


async def test_model_calls_are_measured_without_the_caller_doing_anything(
    make_api: MakeApi, tmp_path: Path
) -> None:
    from app.providers.scripted import Script, ScriptedError, ScriptedProvider, ScriptedTurn

    script = Script(
        mode="sequence",
        turns=[
            ScriptedTurn(text="Hello there, friend."),
            ScriptedTurn(error=ScriptedError(status=503, message="down")),
        ],
    )
    provider = ScriptedProvider(script, delay_ms=0)
    chat = {"messages": [{"role": "user", "content": "hi"}]}
    async with make_api(sqlite_settings(tmp_path), providers={"scripted": provider}) as api:
        assert (await api.post("/api/chat", json=chat)).status_code == 200
        await api.post("/api/chat", json=chat)
        text = (await api.get("/metrics")).text
    provider.assert_all_used()
    model = 'model="scripted-demo"'
    assert f"chatbff_time_to_first_token_seconds_count{{{model}}} 1.0" in text
    assert f'chatbff_provider_latency_seconds_count{{{model},provider="scripted"}} 2.0' in text
    assert f"chatbff_tokens_output_total{{{model}}} 3.0" in text
    assert (
        f'chatbff_provider_errors_total{{code="provider_unavailable",{model},'
        'provider="scripted"} 1.0'
    ) in text


async def test_once_draining_new_requests_get_503_shutting_down(
    make_api: MakeApi, tmp_path: Path
) -> None:
    async with make_api(sqlite_settings(tmp_path)) as api:
        before = await api.get("/api/models")
        api.app.state.drain.begin()
        after = await api.get("/api/models", headers={"X-Request-ID": "late-1"})
    assert before.status_code == 200
    assert after.status_code == 503
    assert after.json()["error"]["code"] == "shutting_down"
    assert after.headers["retry-after"] == "2"
    assert after.headers["connection"] == "close"
    assert after.headers["x-request-id"] == "late-1"


async def test_server_tool_calls_are_counted_by_tool_and_outcome(
    make_api: MakeApi, tmp_path: Path
) -> None:
    from app.providers.scripted import Script, ScriptedProvider, ScriptedToolCall, ScriptedTurn

    script = Script(
        mode="sequence",
        turns=[
            ScriptedTurn(
                tool_calls=[
                    ScriptedToolCall(name="add_node", args={"label": "Person", "name": "Ada"}),
                    ScriptedToolCall(name="add_node", args={"label": 3}),
                ]
            ),
            ScriptedTurn(tool_calls=[ScriptedToolCall(name="delete_node", args={"id": "Ada"})]),
        ],
    )
    provider = ScriptedProvider(script, delay_ms=0)
    settings = sqlite_settings(tmp_path, example_tools_enabled=True)
    async with make_api(settings, providers={"scripted": provider}) as api:
        chat = {"messages": [{"role": "user", "content": "add Ada, then delete her"}]}
        assert (await api.post("/api/chat", json=chat)).status_code == 200
        text = (await api.get("/metrics")).text
    provider.assert_all_used()
    assert 'chatbff_tool_calls_total{outcome="success",tool="add_node"} 1.0' in text
    assert 'chatbff_tool_calls_total{outcome="error",tool="add_node"} 1.0' in text
    assert 'chatbff_tool_calls_total{outcome="approval_needed",tool="delete_node"} 1.0' in text
