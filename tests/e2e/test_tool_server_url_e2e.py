"""An MCP server's URL is part of the deployment's secrets (`MCP_SERVERS` is a secret
setting): many hosted MCP servers take their key in the URL's path or query, and so do some
provider gateways. A real process talks to such servers that refuse it (401) or answer 500;
the URL's secret parts appear in no log line, at the default level or at DEBUG, where the
Anthropic SDK writes the full URL of every request. A header value with the spaces or the
line break of a pasted or file-read key is sent trimmed, not refused by the HTTP client
with an error that quoted the key in the log and in /readyz."""

from __future__ import annotations

import http.server
import json
import secrets
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.e2e.conftest import Launch

pytestmark = pytest.mark.e2e

PATH_KEY = f"pathkey{secrets.token_hex(12)}"
QUERY_KEY = f"querykey{secrets.token_hex(12)}"
WAIT = 30.0


class _Refusing(http.server.BaseHTTPRequestHandler):
    def _refuse(self) -> None:
        status = 401 if "refuse" in self.path else 500
        self.send_response(status)
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"no")

    do_GET = do_POST = do_DELETE = _refuse

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def refusing_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_an_mcp_servers_url_is_never_logged(launch: Launch, refusing_server: str) -> None:
    servers = [
        {"name": "hosted", "transport": "streamable-http",
         "url": f"{refusing_server}/refuse/{PATH_KEY}/mcp?key={QUERY_KEY}"},
        {"name": "broken", "transport": "streamable-http",
         "url": f"{refusing_server}/fail/{PATH_KEY}/mcp?key={QUERY_KEY}"},
    ]  # fmt: skip
    service = launch(LOG_LEVEL="INFO", MCP_SERVERS=json.dumps(servers))
    deadline = time.monotonic() + WAIT
    while True:
        sources = httpx.get(f"{service.base_url}/readyz", timeout=5).json().get("toolSources")
        if sources and all(s["state"] == "unavailable" for s in sources):
            break
        assert time.monotonic() < deadline, sources
        time.sleep(0.1)
    logs = service.logs()
    assert "/refuse/" in logs or "hosted" in logs  # the attempts were logged, by name
    assert PATH_KEY not in logs
    assert QUERY_KEY not in logs


def test_a_providers_url_is_never_logged_even_at_debug(
    launch: Launch, refusing_server: str
) -> None:
    catalogue = [
        {"id": "claude", "provider": "anthropic", "upstream_model": "claude-haiku-4-5"},
        {"id": "gpt", "provider": "openai", "upstream_model": "gpt-4o-mini"},
    ]
    service = launch(
        LOG_LEVEL="DEBUG",
        ANTHROPIC_API_KEY="sk-ant-e2e-not-a-real-key",
        ANTHROPIC_BASE_URL=f"{refusing_server}/refuse/{PATH_KEY}?key={QUERY_KEY}",
        OPENAI_API_KEY="sk-e2e-not-a-real-key",
        OPENAI_BASE_URL=f"{refusing_server}/fail/{PATH_KEY}/v1?key={QUERY_KEY}",
        PROVIDER_MAX_RETRIES="0",
        MODELS_JSON=json.dumps(catalogue),
        DEFAULT_MODEL="claude",
    )
    answers = []
    ask = [{"role": "user", "content": "x"}]
    for model in ("claude", "gpt"):
        for stream in (False, True):
            body = {"model": model, "stream": stream, "messages": ask}
            answers.append(httpx.post(f"{service.base_url}/api/chat", json=body, timeout=30).text)
    service.stop()
    logs = service.logs()
    assert "/v1/messages" in logs  # the SDK's DEBUG lines with the URL were written
    for text in (logs, *answers):
        assert PATH_KEY not in text
        assert QUERY_KEY not in text


def test_an_mcp_headers_key_with_a_line_break_is_sent_trimmed_and_never_shown(
    launch: Launch,
) -> None:
    from tests.mcp.conftest import HttpServer

    server = HttpServer()
    server.start()
    try:
        servers = [
            {"name": "filed", "transport": "streamable-http", "url": server.url,
             "headers": {"X-Api-Key": f"{PATH_KEY}\n"}},
            {"name": "pasted", "transport": "streamable-http", "url": server.url,
             "headers": {"Authorization": f" Token {QUERY_KEY} "}},
        ]  # fmt: skip
        service = launch(LOG_LEVEL="INFO", MCP_SERVERS=json.dumps(servers))
        deadline = time.monotonic() + WAIT
        while True:
            ready = httpx.get(f"{service.base_url}/readyz", timeout=5).text
            sources = json.loads(ready).get("toolSources")
            if sources and all(s["state"] != "connecting" for s in sources):
                break
            assert time.monotonic() < deadline, sources
            time.sleep(0.1)
        service.stop()
    finally:
        server.stop()
    assert [s["state"] for s in sources] == ["connected", "connected"], sources
    for text in (service.logs(), ready):
        assert PATH_KEY not in text
        assert QUERY_KEY not in text
