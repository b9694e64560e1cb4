"""`POST /v1/chat/completions`: the OpenAI-compatible surface.

The official openai SDK pointed at chat-bff (`base_url=".../v1"`) works unchanged, also
when the model behind it is Anthropic. Errors answer in OpenAI's own shape (see
`app.api.errors`). Fields that could smuggle identity or routing are refused; other
OpenAI parameters we do not act on are accepted and ignored, as compatible servers do.
"""

from __future__ import annotations

import time
from typing import Any

from fastapi import Request
from fastapi.responses import Response

from app.api.chat_completion import completion_body, completion_id
from app.api.deps import CallerDep, CatalogDep, TurnDep
from app.api.encoders.chat_chunks import ChatChunkEncoder
from app.api.event_streams import event_stream
from app.api.openai_params import chat_options
from app.api.routing import api_router
from app.api.schemas.chat import ChatCompletion
from app.api.schemas.chat_messages import chat_messages
from app.api.schemas.openai_chat import (
    ChatCompletionRequest,
    OpenAIModel,
    OpenAIModelList,
)
from app.api.turn import StatelessTurn, interrupted_events, run_turn
from app.domain.errors import InvalidRequest
from app.domain.events import SequencedEvent
from app.domain.models import allowed
from app.runs.handle import RunHandle
from app.runs.requests import TurnInput
from app.translate.openai_chat.read import (
    messages_from_openai,
    tool_choice_from_openai,
    tools_from_openai,
)

router = api_router(prefix="/v1", tags=["openai-compatible"])


class ChatCompletionsWire:
    """`chat.completion.chunk` frames, or one `chat.completion` object."""

    def __init__(self, handle: RunHandle, client_tools: frozenset[str], include_usage: bool):
        self._run_id = handle.run_id
        self._client_tools = client_tools
        self._chunks = ChatChunkEncoder(
            completion_id=completion_id(handle),
            model=handle.model_id,
            created=int(time.time()),
            client_tools=client_tools,
            include_usage=include_usage,
        )

    def encode(self, batch: list[SequencedEvent]) -> bytes:
        return self._chunks.encode(batch)

    def farewell(self) -> bytes:
        return self._chunks.encode(interrupted_events(self._run_id))

    async def answer(self, handle: RunHandle) -> dict[str, Any]:
        return completion_body(handle, handle.result(), set(self._client_tools))


@router.post(
    "/chat/completions",
    summary="OpenAI-compatible chat completions (stream and non-stream).",
    responses={
        200: {
            "model": ChatCompletion,
            "description": "A chat.completion object, or chat.completion.chunk SSE frames.",
            "content": event_stream("ChatCompletionStreamEvent"),
        }
    },
)
async def chat_completions(body: ChatCompletionRequest, request: Request, ctx: TurnDep) -> Response:
    history = messages_from_openai(chat_messages(body.messages))
    if not history:
        raise InvalidRequest("messages must not be empty.", param="messages")
    client_tools = tools_from_openai(body.tools or [])
    turn = StatelessTurn(
        history=history,
        input=TurnInput(
            client_tools=client_tools,
            tool_choice=tool_choice_from_openai(body.tool_choice),
            model_id=body.model,
            max_output_tokens=body.max_completion_tokens or body.max_tokens,
            temperature=body.temperature,
            parallel_tool_calls=body.parallel_tool_calls,
            options=chat_options(body),
            retractable=not body.stream,  # streamed chunks cannot be taken back
        ),
        stream=body.stream,
        status_before_stream=True,
    )
    names = frozenset(t.name for t in client_tools)
    include_usage = bool(body.stream_options and body.stream_options.include_usage)
    return await run_turn(
        request,
        ctx.caller,
        ctx.runs,
        ctx.stream,
        turn,
        lambda handle: ChatCompletionsWire(handle, names, include_usage),
    )


@router.get(
    "/models",
    response_model=OpenAIModelList,
    summary="OpenAI-compatible model list (the catalogue, as this caller may use it).",
)
async def list_models_openai(catalog: CatalogDep, caller: CallerDep) -> OpenAIModelList:
    return OpenAIModelList(
        data=[
            OpenAIModel(id=m.id, created=0, owned_by=m.provider)
            for m in catalog.all()
            if allowed(m, caller.roles)
        ]
    )


@router.get(
    "/models/{model_id}",
    response_model=OpenAIModel,
    summary="One model of the catalogue, in OpenAI's shape (`client.models.retrieve`).",
    responses={404: {"description": "No such model, or not one this caller may use."}},
)
async def retrieve_model_openai(
    model_id: str, catalog: CatalogDep, caller: CallerDep
) -> OpenAIModel:
    model = catalog.resolve(model_id, caller.roles)
    return OpenAIModel(id=model.id, created=0, owned_by=model.provider)
