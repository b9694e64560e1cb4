"""`metadata` as OpenAI accepts it on every `/v1` object that takes one: at most 16
pairs, keys at most 64 characters, values strings of at most 512.

Refused the way OpenAI refuses it, so a client that handles OpenAI's 400 handles ours:
OpenAI's own `code` (`object_above_max_properties`, `string_above_max_length`) and
`param` (`metadata`, or `metadata.<key>` for the value that is too long), carried by an
`OpenAIParamError` to the `/v1` validation handler (`app.api.errors`), since pydantic's
location would only name the field.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, ValidationInfo, WithJsonSchema

from app.api.errors import OpenAIParamError

MAX_PAIRS = 16
MAX_KEY_LENGTH = 64
MAX_VALUE_LENGTH = 512


def check_metadata(value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
    field = info.field_name or "metadata"
    if len(value) > MAX_PAIRS:
        raise OpenAIParamError(
            "object_above_max_properties",
            field,
            f"Invalid '{field}': too many properties. Expected an object with at most "
            f"{MAX_PAIRS} properties, but got an object with {len(value)} properties instead.",
        )
    for key, text in value.items():
        if len(key) > MAX_KEY_LENGTH:
            raise OpenAIParamError(
                "string_above_max_length",
                field,
                f"Invalid '{field}': key too long. Expected a key with maximum length "
                f"{MAX_KEY_LENGTH}, but got a key with length {len(key)} instead.",
            )
        if len(text) > MAX_VALUE_LENGTH:
            raise OpenAIParamError(
                "string_above_max_length",
                f"{field}.{key}",
                f"Invalid '{field}.{key}': string too long. Expected a string with maximum "
                f"length {MAX_VALUE_LENGTH}, but got a string with length {len(text)} instead.",
            )
    return value


OpenAIMetadata = Annotated[
    dict[str, str],
    AfterValidator(check_metadata),
    WithJsonSchema(
        {
            "type": "object",
            "maxProperties": MAX_PAIRS,
            "propertyNames": {"maxLength": MAX_KEY_LENGTH},
            "additionalProperties": {"type": "string", "maxLength": MAX_VALUE_LENGTH},
        }
    ),
]
"""Up to 16 string pairs; keys up to 64 characters, values up to 512 (OpenAI's limits)."""
