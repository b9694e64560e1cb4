"""Values of Chat Completions parameters that OpenAI's API refuses and a JSON type cannot
say: at most 4 `stop` sequences, a `seed` of 64 bits, `logit_bias` of token ids to biases
in [-100, 100], a `response_format` of a type OpenAI knows (`json_schema` with its
`json_schema.name`).

Refused here, in OpenAI's words and `code` (an `OpenAIParamError`, see
`app.api.schemas.openai_metadata`), before any run starts: passed on, the first two were
ignored by a compatible server or Anthropic, or refused by OpenAI as a provider failure
that named no parameter; a `json_schema` without its schema was read as no format at all.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, StrictInt

from app.api.errors import OpenAIParamError

MAX_STOP = 4
SEED_BITS = 64
MAX_BIAS = 100
RESPONSE_FORMATS = ("text", "json_object", "json_schema")
_TOKEN_ID = re.compile(r"[0-9]{1,10}")


def check_stop(value: str | list[str]) -> str | list[str]:
    if isinstance(value, list) and len(value) > MAX_STOP:
        raise OpenAIParamError(
            "array_above_max_length",
            "stop",
            f"Invalid 'stop': array too long. Expected an array with maximum length "
            f"{MAX_STOP}, but got an array with length {len(value)} instead.",
        )
    return value


def check_seed(value: int) -> int:
    # Bounds in the schema itself would print as floats (9.2e18) in the OpenAPI document.
    if not -(2 ** (SEED_BITS - 1)) <= value < 2 ** (SEED_BITS - 1):
        raise OpenAIParamError(
            "invalid_value",
            "seed",
            f"Invalid 'seed': {value} does not fit in a signed {SEED_BITS}-bit integer.",
        )
    return value


def check_logit_bias(value: dict[str, float]) -> dict[str, float]:
    for token, bias in value.items():
        if not _TOKEN_ID.fullmatch(token):
            raise OpenAIParamError(
                "invalid_value",
                "logit_bias",
                f"Invalid 'logit_bias': key {token!r} is not a token id (a whole number).",
            )
        if not -MAX_BIAS <= bias <= MAX_BIAS:
            raise OpenAIParamError(
                "invalid_value",
                "logit_bias",
                f"Invalid 'logit_bias': the bias of token {token} is {bias:g}; a bias must "
                f"be between -{MAX_BIAS} and {MAX_BIAS}.",
            )
    return value


def check_response_format(value: dict[str, Any]) -> dict[str, Any]:
    kind = value.get("type")
    if kind not in RESPONSE_FORMATS:
        raise OpenAIParamError(
            "invalid_value",
            "response_format.type",
            f"Invalid value for 'response_format.type': {kind!r}; expected one of "
            + ", ".join(RESPONSE_FORMATS)
            + ".",
        )
    spec = value.get("json_schema")
    if kind == "json_schema" and not (isinstance(spec, dict) and isinstance(spec.get("name"), str)):
        raise OpenAIParamError(
            "missing_required_parameter",
            "response_format.json_schema",
            "Missing required parameter: 'response_format.json_schema' (an object with "
            "`name` and `schema`).",
        )
    return value


StopSequences = Annotated[str | list[str], AfterValidator(check_stop)]
Seed = Annotated[StrictInt, AfterValidator(check_seed)]
LogitBias = Annotated[dict[str, float], AfterValidator(check_logit_bias)]
ResponseFormat = Annotated[dict[str, Any], AfterValidator(check_response_format)]
