"""`GET /v1/responses/{id}` and `POST /v1/responses/{id}/cancel`: a stored response (a
conversation's turn, or a background response) retrieved as it stands, its stream
replayed or resumed from a sequence number, or its run stopped. What is stored and how
the stream is rebuilt is `app.api.responses_stored`; the create is
`app.api.routes.openai_responses`.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Query
from fastapi.responses import JSONResponse, Response

from app.api.deps import CallerDep, DbDep, RunsDep, StreamDep, StreamSlot, ToolCatalogDep
from app.api.event_streams import event_stream
from app.api.exact_params import RUN_SEQ_MAX, QueryBool
from app.api.responses_stored import after, as_it_stands, stored_encoder, stored_run
from app.api.routing import api_router
from app.api.schemas.responses_items import ResponseObject
from app.api.streaming import sse_response

router = api_router(prefix="/v1", tags=["openai-compatible"])


@router.get(
    "/responses/{response_id}",
    dependencies=[StreamSlot],
    summary="Retrieve a stored response (a conversation's turn or a background response), "
    "or replay / resume its stream.",
    responses={
        200: {
            "model": ResponseObject,
            "description": "The Response as it stands, or with `stream=true` its Responses "
            "streaming events as SSE: replayed from the start, or after `starting_after`, "
            "then live until the response ends.",
            "content": event_stream("ResponseStreamEvent"),
        },
        404: {
            "description": "`response_not_found`: unknown, another user's, or stateless "
            "(only responses of a `conversation` or `background` are stored)."
        },
    },
)
async def retrieve_response(
    response_id: str,
    runs: RunsDep,
    db: DbDep,
    config: StreamDep,
    tools: ToolCatalogDep,
    caller: CallerDep,
    stream: Annotated[
        QueryBool, Query(description="`true`: stream the response's events as SSE.")
    ] = False,
    starting_after: Annotated[
        int | None,
        Query(
            ge=-1,
            le=RUN_SEQ_MAX,
            description="With stream: only events whose sequence_number is above this.",
        ),
    ] = None,
    include: Annotated[list[str] | None, Query(description="Accepted, ignored.")] = None,
) -> Response:
    record = await stored_run(db, caller.user_id, response_id)
    if stream:
        encoder = stored_encoder(record, tools.may_pause())
        events = runs.follow(caller.user_id, record.id, conversation_id=record.conversation_id)
        encode = after(encoder, -1 if starting_after is None else starting_after)
        return sse_response(events, encode, config)
    return JSONResponse(await as_it_stands(runs, record, tools.may_pause()))


@router.post(
    "/responses/{response_id}/cancel",
    summary="Cancel an in-progress response (a conversation's turn or a background "
    "response): its run stops.",
    responses={
        200: {
            "model": ResponseObject,
            "description": "The Response once its run stopped: status `cancelled`, with "
            "the output produced so far. A response that already ended is returned "
            "unchanged (cancelling is idempotent, as OpenAI's for background responses).",
        },
        404: {
            "description": "`response_not_found`: unknown, another user's, or stateless "
            "(only responses of a `conversation` or `background` are stored)."
        },
        503: {
            "description": "`run_unreachable`: the instance running it has not confirmed "
            "the stop yet; the cancel is kept, send it again shortly."
        },
    },
)
async def cancel_response(
    response_id: str,
    runs: RunsDep,
    db: DbDep,
    tools: ToolCatalogDep,
    caller: CallerDep,
) -> Response:
    """Stops the run behind the response on whichever instance runs it (the run-cancel
    path of `POST /api/conversations/{id}/runs/{run_id}/cancel`), so the conversation
    takes its next turn at once."""
    record = await stored_run(db, caller.user_id, response_id)
    await runs.cancel(caller.user_id, record.id, record.conversation_id)
    return JSONResponse(await as_it_stands(runs, record, tools.may_pause()))
