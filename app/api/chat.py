"""`POST /api/chat`: one stateless turn, streamed as native SSE or answered whole."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from app.api.chat_common import build_run_request, completion_body, wait_for_run
from app.api.deps import CallerDep, Svc
from app.api.encoders import native
from app.api.schemas.chat import ChatRequest, ChatResponse
from app.api.streaming import sse_response
from app.domain.errors import ChatBffError
from app.translate.aikit import messages_from_wire
from app.translate.openai_chat import tool_choice_from_openai, tools_from_openai

router = APIRouter(prefix="/api", tags=["chat"])

_SSE_DOC: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "A Chat Completions object with typed parts, or native SSE when "
        "`stream: true` / `Accept: text/event-stream`.",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    }
}


def wants_stream(request: Request, body_stream: bool) -> bool:
    return body_stream or "text/event-stream" in request.headers.get("accept", "")


@router.post(
    "/chat",
    response_model=ChatResponse,
    responses=_SSE_DOC,
    summary="Run one chat turn (server tools run in the loop).",
)
async def chat(body: ChatRequest, request: Request, services: Svc, caller: CallerDep) -> Response:
    history = messages_from_wire(body.messages)
    client_tools = tools_from_openai([t.model_dump(exclude_none=True) for t in body.tools or []])
    run_request = build_run_request(
        services,
        caller,
        model_id=body.model,
        client_tools=client_tools,
        tool_choice=tool_choice_from_openai(body.tool_choice),
        max_output_tokens=body.max_tokens,
        temperature=body.temperature,
    )
    run = await services.runs.start_stateless(run_request, history)

    if wants_stream(request, body.stream):

        async def stop_run() -> None:
            if body.on_disconnect == "cancel":
                await services.runs.cancel(caller.user_id, run.run_id, None)

        return sse_response(
            run.log.follow(0),
            native.frames,
            heartbeat=services.settings.heartbeat_seconds,
            on_disconnect=stop_run,
        )

    await wait_for_run(request, services, caller, run, cancel=body.on_disconnect == "cancel")
    if run.failure is not None and run.status == "failed":
        raise run.failure
    message = run.final_message
    if message is None:  # pragma: no cover - a finished run always has its message
        raise ChatBffError("The run ended without a message.")
    names = {t.name for t in client_tools}
    body_out = completion_body(run, message, run_request.model.id, names)
    usage = message.metadata.get("usage", {}) if message.metadata else {}
    body_out.update(
        message=message.model_dump(mode="json"),
        messages=[m.model_dump(mode="json") for m in [*history, message]],
        run_id=run.run_id,
        status=run.status,
        run_usage=usage,
    )
    return JSONResponse(body_out)
