"""Query and header values read exactly as the OpenAPI schema states them.

A boolean query parameter is `true` or `false` (what an OpenAPI boolean serialises to and
what the openai SDK sends), or `True` / `False` (what python-requests and httpx make of a
Python bool in `params`); pydantic alone would also read `yes`, `on`, `1` or `t`, and a
typo'd `?stream=ye` would then be an error while `?stream=yes` streamed. A `Last-Event-ID`
is the `id:` the service emitted: ASCII digits, no sign, space or `_` (which `int()` would
take), bounded so that no number past the sequence column reaches the database.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Header
from pydantic import BeforeValidator

from app.domain.errors import InvalidRequest

# A run's events are numbered in a 32-bit INTEGER column; a larger position would overflow
# the database driver (a 500, found by Schemathesis) instead of being refused.
RUN_SEQ_MAX = 2**31 - 1

_BOOLEAN_TEXTS = frozenset({"true", "false", "True", "False"})


def _boolean_text(value: Any) -> Any:
    if value not in _BOOLEAN_TEXTS:
        raise ValueError("must be true or false")
    return value


QueryBool = Annotated[bool, BeforeValidator(_boolean_text)]


def last_event_id_header(limit: int) -> Any:
    """The `Last-Event-ID` header of a stream whose ids run from 0 to `limit`."""
    return Header(
        alias="Last-Event-ID",
        description=f"The last `id:` received: a sequence number, 0 to {limit}.",
        json_schema_extra={"pattern": f"^[0-9]{{1,{len(str(limit))}}}$"},
    )


def resume_position(last_event_id: str, limit: int) -> int:
    """The sequence number a `Last-Event-ID` names; 400 unless it is one, 0 to `limit`."""
    digits = last_event_id.isascii() and last_event_id.isdigit()
    if not digits or len(last_event_id) > len(str(limit)) or int(last_event_id) > limit:
        raise InvalidRequest("Last-Event-ID must be a sequence number.", param="Last-Event-ID")
    return int(last_event_id)
