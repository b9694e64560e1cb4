"""Generation options as Anthropic Messages parameters, where Anthropic has an equivalent.

stop              -> stop_sequences
top_p             -> top_p (raw body: the SDK's signature no longer lists it)
user              -> metadata.user_id
reasoning_effort  -> output_config.effort (none/minimal -> low; xhigh kept)
response_format   -> output_config.format: a json_schema's schema; json_object as the
                     schema of any JSON object; text as nothing
verbosity, seed, logprobs, top_logprobs, frequency/presence penalties, logit_bias,
service_tier      -> no equivalent: not in SUPPORTED, so a request naming one is
                     refused before the run starts (see app.runs.requests)
"""

from __future__ import annotations

from typing import Any

from app.domain.errors import InvalidRequest
from app.domain.stream import GenerationOptions

SUPPORTED: frozenset[str] = frozenset(
    {"stop", "top_p", "user", "reasoning_effort", "response_format"}
)

_EFFORT = {
    "none": "low",
    "minimal": "low",
    "low": "low",
    "medium": "medium",
    "high": "high",
    "xhigh": "xhigh",
}


def options_to_anthropic(options: GenerationOptions) -> tuple[dict[str, Any], dict[str, Any]]:
    """(parameters, raw body fields) for the options Anthropic supports."""
    params: dict[str, Any] = {}
    raw: dict[str, Any] = {}
    if options.stop:
        params["stop_sequences"] = list(options.stop)
    if options.top_p is not None:
        raw["top_p"] = options.top_p
    if options.user is not None:
        params["metadata"] = {"user_id": options.user}
    output: dict[str, Any] = {}
    if options.reasoning_effort is not None:
        output["effort"] = _EFFORT[options.reasoning_effort]
    output_format = _output_format(options.response_format)
    if output_format is not None:
        output["format"] = output_format
    if output:
        params["output_config"] = output
    return params, raw


def _output_format(response_format: dict[str, Any] | None) -> dict[str, Any] | None:
    if response_format is None:
        return None
    kind = response_format.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "json_schema", "schema": {"type": "object"}}
    if kind == "json_schema":
        spec = response_format.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, dict) else None
        if not isinstance(schema, dict):
            raise InvalidRequest(
                "response_format.json_schema.schema must be a JSON schema object.",
                param="response_format",
            )
        return {"type": "json_schema", "schema": schema}
    raise InvalidRequest(
        f"response_format type {kind!r} is not one of text, json_object, json_schema.",
        param="response_format",
    )
