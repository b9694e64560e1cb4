"""A server tool that asks the user mid-call, and asks again when the answer is vague."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from app.tools.base import InputRequired, ServerTool, ToolArgs, ToolContext
from app.tools.registry import ToolRegistry

COLOUR = {
    "type": "object",
    "properties": {"colour": {"type": "string"}},
    "required": ["colour"],
}


class PickArgs(ToolArgs):
    item: str = Field(description="What to paint.")


async def pick_colour(args: PickArgs, ctx: ToolContext) -> dict[str, Any]:
    answer = ctx.answer
    if answer is None:
        raise InputRequired(f"Which colour for the {args.item}?", COLOUR, {"round": 1})
    colour = (answer.content or {}).get("colour")
    if answer.action == "accept" and colour == "any":
        raise InputRequired("Be specific: which colour?", COLOUR, {"round": 2})
    return {"item": args.item, "action": answer.action, "colour": colour}


def register(registry: ToolRegistry) -> None:
    registry.register(
        ServerTool(
            name="pick_colour",
            description="Paint an item in the colour the user picks.",
            args_model=PickArgs,
            handler=pick_colour,
        )
    )
