"""OpenAI request parameters -> our generation options: forwarded, translated, accepted
as a no-op, or refused with a 400 naming the parameter. Nothing is dropped silently.

    Chat Completions         Responses               becomes
    ----------------------   ---------------------   -------------------------------------
    stop, top_p, seed,       top_p, top_logprobs,    GenerationOptions, forwarded by the
    logprobs, top_logprobs,  service_tier            provider that supports them (OpenAI:
    frequency/presence_      text.verbosity          all; Anthropic: stop, top_p, user,
    penalty, logit_bias,     reasoning.effort        reasoning_effort, response_format);
    service_tier, verbosity  text.format             any other provider refuses it (400)
    reasoning_effort                                 (app.runs.requests)
    response_format
    user, safety_identifier  user, safety_id...      user
    n=1, store=false,        truncation, store,      accepted, no effect (n is always 1;
    logprobs=false, 0        include=[], reasoning   nothing is stored upstream; history is
    penalties, {} bias       .summary                always fitted to the window)
    anything else            anything else           400 unsupported_parameter
"""

from __future__ import annotations

from typing import Any

from app.api.schemas.openai_chat import ChatCompletionRequest
from app.api.schemas.openai_responses import ResponsesRequest
from app.api.schemas.refused import REFUSED_FIELDS
from app.domain.errors import InvalidRequest
from app.domain.stream import GenerationOptions


def _refuse_unknown(extra: dict[str, Any] | None) -> None:
    for name in extra or {}:
        if name in REFUSED_FIELDS:
            raise InvalidRequest(f"unsupported field: {name}", param=name)
        raise InvalidRequest(
            f"Unrecognized request argument supplied: {name}",
            param=name,
            code="unsupported_parameter",
        )


def _user(user: str | None, safety_identifier: str | None) -> str | None:
    return user if user is not None else safety_identifier


def chat_options(body: ChatCompletionRequest) -> GenerationOptions:
    """The generation options of a Chat Completions request (or a 400)."""
    _refuse_unknown(body.model_extra)
    if body.store:
        raise InvalidRequest(
            "store is not supported: chat-bff never asks the provider to store completions.",
            param="store",
        )
    stop = [body.stop] if isinstance(body.stop, str) else body.stop
    return GenerationOptions(
        stop=stop or None,
        top_p=body.top_p,
        seed=body.seed,
        response_format=body.response_format,
        reasoning_effort=body.reasoning_effort,
        verbosity=body.verbosity,
        logprobs=body.logprobs or None,
        top_logprobs=body.top_logprobs if body.logprobs else None,
        frequency_penalty=body.frequency_penalty or None,
        presence_penalty=body.presence_penalty or None,
        logit_bias=body.logit_bias or None,
        service_tier=body.service_tier,
        user=_user(body.user, body.safety_identifier),
    ).or_shared()


def _response_format(text_format: dict[str, Any] | None) -> dict[str, Any] | None:
    """Responses' `text.format` in Chat Completions' `response_format` shape."""
    if text_format is None:
        return None
    kind = text_format.get("type")
    if kind in ("text", "json_object"):
        return {"type": kind}
    if kind == "json_schema":
        spec = {k: v for k, v in text_format.items() if k in ("name", "schema", "strict")}
        spec.setdefault("name", "response")
        if "description" in text_format:
            spec["description"] = text_format["description"]
        return {"type": "json_schema", "json_schema": spec}
    raise InvalidRequest(
        f"text.format type {kind!r} is not one of text, json_object, json_schema.",
        param="text.format",
    )


def responses_options(body: ResponsesRequest) -> GenerationOptions:
    """The generation options of a Responses request (or a 400)."""
    _refuse_unknown(body.model_extra)
    if body.include:
        raise InvalidRequest(
            f"include {body.include[0]!r} is not supported: no extra output data is produced.",
            param="include",
        )
    text = body.text
    return GenerationOptions(
        top_p=body.top_p,
        top_logprobs=body.top_logprobs or None,
        service_tier=body.service_tier,
        user=_user(body.user, body.safety_identifier),
        response_format=_response_format(text.format if text else None),
        verbosity=text.verbosity if text else None,
        reasoning_effort=body.reasoning.effort if body.reasoning else None,
    ).or_shared()
