"""`POST /api/chat`: one stateless turn, streamed as native SSE or answered whole.

The answer without streaming is a Chat Completions object (so unchanged AIKit and OpenAI
clients work) plus the assistant message as typed parts and the whole updated history.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from fastapi import Request
from fastapi.responses import Response

from app.api.chat_approvals import ChatApprovals
from app.api.chat_completion import completion_body
from app.api.deps import TurnDep
from app.api.encoders import native
from app.api.event_streams import event_stream
from app.api.routing import api_router
from app.api.schemas.chat import ChatRequest, ChatResponse
from app.api.schemas.chat_messages import chat_messages
from app.api.streaming import Encoded
from app.api.turn import StatelessTurn, run_turn, wants_stream
from app.domain.events import ErrorEvent, SequencedEvent
from app.runs.handle import RunHandle
from app.runs.requests import TurnInput
from app.translate.aikit import messages_from_wire
from app.translate.openai_chat.read import tool_choice_from_openai, tools_from_openai

router = api_router(prefix="/api", tags=["chat"])

_SSE_DOC: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "A Chat Completions object with typed parts, or native SSE when "
        "`stream: true` / `Accept: text/event-stream`.",
        "content": event_stream("RunEvent"),
    }
}


class NativeChatWire:
    """Native SSE frames, or the Chat Completions object with typed parts."""

    def __init__(self, handle: RunHandle, claims: ChatApprovals, client_tools: set[str]):
        self._handle = handle
        self._claims = claims
        self._client_tools = client_tools

    def encode(self, batch: list[SequencedEvent]) -> Encoded:
        return native.frames(batch)

    def farewell(self) -> bytes:
        return native.error_frame(
            ErrorEvent(
                run_id=self._handle.run_id,
                code="shutting_down",
                message="The service is restarting; send the request again.",
                retryable=True,
            )
        )

    async def answer(self, handle: RunHandle) -> dict[str, Any]:
        message = handle.result()
        # A pending approval shows as a call of the client's confirmation tool, if declared.
        view = message.model_copy(
            update={"content": self._claims.confirmation_view(message.parts())}
        )
        body = completion_body(handle, view, self._client_tools)
        metadata = message.metadata or {}
        if metadata.get("finish_reason") == "requires_action":
            body["choices"][0]["finish_reason"] = "requires_action"
        usage = metadata.get("usage", {})
        history = self._claims.history
        body.update(
            message=message.model_dump(mode="json"),
            messages=[m.model_dump(mode="json") for m in [*history, message]],
            run_id=handle.run_id,
            status=handle.status,
            run_usage=usage,
        )
        return body


@router.post(
    "/chat",
    response_model=ChatResponse,
    responses=_SSE_DOC,
    summary="Run one chat turn (server tools run in the loop).",
)
async def chat(body: ChatRequest, request: Request, ctx: TurnDep) -> Response:
    history = messages_from_wire(chat_messages(body.messages))
    client_tools = tools_from_openai([t.model_dump(exclude_none=True) for t in body.tools or []])
    turn = StatelessTurn(
        history=history,
        input=TurnInput(
            client_tools=client_tools,
            tool_choice=tool_choice_from_openai(body.tool_choice),
            model_id=body.model,
            max_output_tokens=body.max_tokens,
            temperature=body.temperature,
            retractable=True,  # native SSE says `step_reset`; a whole answer is the stored one
        ),
        stream=wants_stream(request, body.stream),
        cancel_on_hangup=body.on_disconnect == "cancel",
    )
    names = {t.name for t in client_tools}
    approvals = ctx.approvals
    confirm = approvals.confirmation_tool
    claims = ChatApprovals(approvals, ctx.caller, confirm if confirm in names else None, history)
    turn = replace(turn, prepare=claims.settle)
    return await run_turn(
        request, ctx.caller, ctx.runs, ctx.stream, turn, lambda h: NativeChatWire(h, claims, names)
    )
