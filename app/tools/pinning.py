"""Scope pinning and argument validation: what stands between the model and the handler.

Every scope argument a tool declares is overwritten with the run's own value before
validation, whatever the model sent; one the run has no value for is removed (so the
model can never supply it). Only then are the arguments validated.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from app.domain.identity import Caller
from app.tools.base import ServerTool


class InvalidArguments(Exception):
    """Arguments the tool refuses; the message is written for the model to fix them."""


def effective_scope(
    caller: Caller, conversation_id: str | None, bound: Mapping[str, str]
) -> dict[str, str]:
    """The values scope arguments are pinned to.

    `bound` comes from the conversation (a workspace or session bound at creation); the
    user and the conversation always come from the caller and the run, never from it.
    """
    scope = {k: v for k, v in bound.items() if k not in {"user_id", "conversation_id"}}
    scope["user_id"] = caller.user_id
    if conversation_id is not None:
        scope["conversation_id"] = conversation_id
    return scope


def pin(tool: ServerTool[Any], args: Mapping[str, Any], scope: Mapping[str, str]) -> dict[str, Any]:
    """A copy of `args` with every declared scope argument set from `scope` (or removed)."""
    pinned = dict(args)
    for name in tool.declared_scope_args():
        if name in scope:
            pinned[name] = scope[name]
        else:
            pinned.pop(name, None)
    return pinned


def _readable(error: ValidationError) -> str:
    problems = []
    for item in error.errors():
        loc = ".".join(str(x) for x in item.get("loc", ())) or "arguments"
        if item.get("type") == "extra_forbidden":
            problems.append(f"{loc}: this argument is not declared by the tool")
        else:
            message = str(item.get("msg", "invalid")).removeprefix("Value error, ")
            problems.append(message if loc == "arguments" else f"{loc}: {message}")
    return "Invalid arguments: " + "; ".join(problems)


def validate(tool: ServerTool[Any], args: Any) -> BaseModel:
    if not isinstance(args, Mapping):
        raise InvalidArguments("Invalid arguments: expected a JSON object")
    try:
        model: BaseModel = tool.args_model.model_validate(dict(args))
        return model
    except ValidationError as exc:
        raise InvalidArguments(_readable(exc)) from None


def pin_and_validate(
    tool: ServerTool[Any], args: Any, scope: Mapping[str, str]
) -> tuple[BaseModel, dict[str, Any]]:
    """The validated arguments model and its canonical JSON form."""
    if not isinstance(args, Mapping):
        raise InvalidArguments("Invalid arguments: expected a JSON object")
    model = validate(tool, pin(tool, args, scope))
    return model, model.model_dump(mode="json")


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def args_hash(args: Any) -> str:
    """sha256 of the canonical JSON of (pinned, validated) arguments."""
    return hashlib.sha256(canonical_json(args).encode()).hexdigest()
