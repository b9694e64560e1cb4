"""A thread's stored messages as AG-UI messages, for the `MESSAGES_SNAPSHOT` a client
gets when it runs on a thread whose history it does not hold (a new page, another
device): user messages keep their text; an assistant message is one AG-UI assistant
message (its text, its tool calls) followed by a tool message per finished call (`id`
`<call id>-result`, as `TOOL_CALL_RESULT` names them); system messages and reasoning are
left out (they are not what the person saw)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ag_ui.core import AssistantMessage, FunctionCall, ToolCall, ToolMessage, UserMessage

from app.domain.messages import Message
from app.domain.parts import FINAL_TOOL_STATUSES, TextPart, ToolPart

AguiMessage = UserMessage | AssistantMessage | ToolMessage


def agui_messages(history: list[Message]) -> list[AguiMessage]:
    return [out for message in history for out in _one(message)]


def _one(message: Message) -> Iterator[AguiMessage]:
    text = "".join(p.data.text for p in message.parts() if isinstance(p, TextPart))
    if message.role == "user":
        yield UserMessage(id=message.id, content=text)
        return
    if message.role != "assistant":
        return
    calls = [p for p in message.parts() if isinstance(p, ToolPart)]
    yield AssistantMessage(
        id=message.id,
        content=text or None,
        tool_calls=[
            ToolCall(
                id=p.id,
                function=FunctionCall(name=p.data.toolName, arguments=_json(p.data.args or {})),
            )
            for p in calls
        ]
        or None,
    )
    for part in calls:
        if part.data.status in FINAL_TOOL_STATUSES:
            failed = part.data.status != "success"
            yield ToolMessage(
                id=f"{part.id}-result",
                tool_call_id=part.id,
                content=(part.data.bodyContent or part.data.status)
                if failed
                else _json(part.data.result),
                error=(part.data.bodyContent or part.data.status) if failed else None,
            )


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
