"""Failover after the first byte as the Vercel AI SDK's own client meets it: ai v7's
`DefaultChatTransport` parsing and `readUIMessageStream` take a stream whose first model
failed mid-answer, drop the partial attempt on `reset-step` and end with only the
replacement; a v5 client (which has no `reset-step`) is never failed over mid-answer.

The streams come from the in-process app with the fake upstreams behind the real openai
and anthropic SDKs; node replays them through the client of each major."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from app.settings import Settings
from tests.e2e.vercel.node import prepare, run_node
from tests.fakes.anthropic_upstream import AnthropicUpstream
from tests.fakes.db import ApiClient, MakeApi
from tests.fakes.failover import WHOLE, cut_then_replaced
from tests.fakes.openai_upstream import FakeOpenAIUpstream

pytestmark = pytest.mark.e2e


@pytest.fixture
async def api(
    make_api: MakeApi,
    failover_settings: Settings,
    openai_upstream: FakeOpenAIUpstream,
    anthropic_upstream: AnthropicUpstream,
) -> AsyncIterator[ApiClient]:
    """Failover after the first byte allowed; the primary's answer will be cut."""
    prepare()
    cut_then_replaced(openai_upstream, anthropic_upstream)
    update = {"failover_after_first_byte": True}
    async with make_api(failover_settings.model_copy(update=update)) as client:
        yield client


async def replay(api: ApiClient, major: int, folder: Path) -> tuple[list[str], dict[str, Any]]:
    message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Hi"}]}
    body = {"id": f"failover-v{major}", "messages": [message], "trigger": "submit-message"}
    response = await api.post(f"/api/ui/chat?v={major}", json=body)
    assert response.status_code == 200, response.text
    path = folder / f"failover-v{major}.sse"
    path.write_text(response.text)
    datas = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
    kinds = [json.loads(d)["type"] for d in datas if d != "[DONE]"]
    result: dict[str, Any] = run_node("replay.mjs", str(major), str(path))[path.stem]
    return kinds, result


def text_of(message: dict[str, Any]) -> str:
    return "".join(p["text"] for p in message["parts"] if p["type"] == "text")


async def test_ai_v7_drops_the_failed_attempt_and_keeps_only_the_replacement(
    api: ApiClient, anthropic_upstream: AnthropicUpstream, tmp_path: Path
) -> None:
    kinds, result = await replay(api, 7, tmp_path)

    assert kinds.index("text-delta") < kinds.index("reset-step")  # a start was shown
    assert result["ok"], result.get("error")
    message = result["message"]
    assert text_of(message) == WHOLE
    assert len(anthropic_upstream.requests) == 1
    assert message["metadata"]["model"] == "claude-backup"
    assert message["metadata"]["replacedAttempts"] == [
        {"model": "gpt-main", "error": "provider_unavailable"}
    ]


async def test_ai_v5_cannot_take_text_back_so_its_run_fails_without_the_fallback(
    api: ApiClient, anthropic_upstream: AnthropicUpstream, tmp_path: Path
) -> None:
    kinds, result = await replay(api, 5, tmp_path)

    assert "reset-step" not in kinds and "error" in kinds
    assert not result["ok"]  # the client raises the run's error, as for any failed run
    assert anthropic_upstream.requests == []
