"""What the stateless chat surfaces (`/api/chat`, `/v1/chat/completions`) share:
turning a request into a run, and a finished run into a Chat Completions answer."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from starlette.requests import Request

from app.container import Services
from app.domain.errors import InvalidRequest
from app.domain.identity import Caller
from app.domain.messages import Message
from app.domain.parts import FINAL_TOOL_STATUSES, Part, ToolPart
from app.domain.stream import ToolChoice, ToolSpec
from app.runs.manager import ActiveRun, RunRequest
from app.translate.openai_chat import parts_to_openai_message

# Top-level fields an OpenAI-shaped body may not carry: they would name an identity or an
# upstream. Other unknown OpenAI parameters are accepted and ignored, as compatible
# servers do.
REFUSED_FIELDS = frozenset(
    {"api_key", "api_base", "base_url", "owner_id", "user_id", "organization", "headers"}
)


def refuse_smuggled(extra: dict[str, Any] | None) -> None:
    """Raise ValueError (a validation error) when `extra` holds a refused field."""
    found = sorted(set(extra or {}) & REFUSED_FIELDS)
    if found:
        raise ValueError(f"unsupported field: {found[0]}")


FINISH_BY_STATUS = {"max_iterations": "length"}


def build_run_request(
    services: Services,
    caller: Caller,
    *,
    model_id: str | None,
    client_tools: list[ToolSpec],
    tool_choice: ToolChoice | None,
    max_output_tokens: int | None,
    temperature: float | None,
) -> RunRequest:
    model = services.catalog.resolve(model_id, caller.roles)
    clashes = [t.name for t in client_tools if services.tools.knows(t.name)]
    if clashes:
        raise InvalidRequest(
            f"Client tool {clashes[0]!r} has the name of a server tool; rename it.",
            param="tools",
        )
    return RunRequest(
        caller=caller,
        model=model,
        provider=services.provider_for(model),
        client_tools=client_tools,
        tool_choice=tool_choice,
        max_output_tokens=max_output_tokens,
        temperature=temperature,
        scope={"user_id": caller.user_id},
    )


def client_visible_parts(parts: list[Part], client_tools: set[str]) -> list[Part]:
    """Parts an OpenAI-shaped client should see as `tool_calls`: only its own pending ones."""
    return [
        p
        for p in parts
        if not isinstance(p, ToolPart)
        or p.data.status in FINAL_TOOL_STATUSES
        or p.data.toolName in client_tools
    ]


def completion_body(
    run: ActiveRun, message: Message, model_id: str, client_tools: set[str]
) -> dict[str, Any]:
    """The Chat Completions object for a finished stateless run."""
    openai_message, finish = parts_to_openai_message(
        client_visible_parts(message.parts(), client_tools)
    )
    usage = message.metadata.get("usage", {}) if message.metadata else {}
    prompt = int(usage.get("input_tokens", 0))
    completion = int(usage.get("output_tokens", 0))
    return {
        "id": f"chatcmpl-{run.run_id.removeprefix('run_')}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model_id,
        "choices": [
            {
                "index": 0,
                "message": openai_message,
                "finish_reason": FINISH_BY_STATUS.get(run.status, finish),
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


async def wait_for_run(
    request: Request, services: Services, caller: Caller, run: ActiveRun, *, cancel: bool = True
) -> None:
    """Wait for a stateless run to finish; with `cancel`, a client that hangs up first
    cancels it, which closes the upstream call (Starlette never cancels the handler of a
    non-streaming response on a disconnect, so the route has to listen for it)."""
    assert run.task is not None
    if not cancel:
        await asyncio.shield(run.task)
        return
    hangup = asyncio.ensure_future(_hangup(request))
    try:
        await asyncio.wait({run.task, hangup}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        hangup.cancel()
        if not run.task.done():
            await services.runs.cancel(caller.user_id, run.run_id, None)


async def _hangup(request: Request) -> None:
    # The body has been read: the next message the server sends is the disconnect.
    while (await request.receive())["type"] != "http.disconnect":
        pass
