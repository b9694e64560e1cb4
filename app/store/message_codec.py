"""Stored messages <-> `Message`, with a schema version on every stored message.

Stored history is a contract: a row written by any earlier release must still load. Each
row keeps the `schema_version` it was written with; `decode_message` runs the upcasters
from that version up to `MESSAGE_SCHEMA_VERSION` before validating. To change the stored
shape, bump the version in `app.domain.messages`, add `UPCASTERS[old] = fn` here (a pure
function on the JSON payload), and add payloads of the old shape to
`tests/store/corpus/` — they are frozen and must keep loading.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.domain.messages import MESSAGE_SCHEMA_VERSION, Message
from app.domain.parts import PARTS_ADAPTER

Payload = dict[str, Any]

# version n -> function turning a version-n payload into a version n+1 payload.
UPCASTERS: dict[int, Callable[[Payload], Payload]] = {}


class StoredMessageError(ValueError):
    """A stored payload that no upcaster can bring to the current version."""


def encode_content(message: Message) -> Any:
    """The `content` column: a plain string, or the parts as `PARTS_ADAPTER` dumps them."""
    if isinstance(message.content, str):
        return message.content
    return PARTS_ADAPTER.dump_python(message.content, mode="json", exclude_none=True)


def upcast(payload: Payload, schema_version: int) -> Payload:
    if schema_version > MESSAGE_SCHEMA_VERSION:
        # Written by a newer release (e.g. during a rolling deploy). The models ignore
        # fields they do not know, so try the payload as it is.
        return payload
    version = schema_version
    while version < MESSAGE_SCHEMA_VERSION:
        step = UPCASTERS.get(version)
        if step is None:
            raise StoredMessageError(f"no upcaster from message schema version {version}")
        payload = step(payload)
        version += 1
    return payload


def decode_message(payload: Payload, schema_version: int) -> Message:
    """A `Message` from a stored payload `{id, role, content, metadata}` of any version."""
    return Message.model_validate(upcast(dict(payload), schema_version))
