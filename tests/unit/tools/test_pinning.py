"""Pinning and validation, before any handler can run."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import Field

from app.domain.identity import Caller
from app.tools.base import ServerTool, ToolArgs, ToolContext, visible_args
from app.tools.catalog import ToolCatalog
from app.tools.pinning import (
    InvalidArguments,
    args_hash,
    effective_scope,
    pin,
    pin_and_validate,
)
from app.tools.registry import ToolRegistry


class Args(ToolArgs):
    query: str = Field(description="q")
    user_id: str | None = Field(default=None, description="pinned")
    workspace_id: str | None = Field(default=None, description="pinned")


async def _noop(args: Args, ctx: ToolContext) -> None:
    return None


TOOL: ServerTool[Any] = ServerTool(name="t", description="", args_model=Args, handler=_noop)
CALLER = Caller(user_id="alice")


def test_the_run_decides_user_and_conversation_whatever_the_bound_scope_says() -> None:
    scope = effective_scope(CALLER, "conv_1", {"user_id": "bob", "workspace_id": "w"})

    assert scope == {"user_id": "alice", "conversation_id": "conv_1", "workspace_id": "w"}


def test_declared_scope_arguments_are_overwritten() -> None:
    pinned = pin(
        TOOL,
        {"query": "x", "user_id": "bob", "workspace_id": "evil"},
        {
            "user_id": "alice",
            "workspace_id": "w",
        },
    )

    assert pinned == {"query": "x", "user_id": "alice", "workspace_id": "w"}


def test_a_scope_argument_the_run_has_no_value_for_is_removed() -> None:
    assert pin(TOOL, {"query": "x", "workspace_id": "evil"}, {"user_id": "alice"}) == {
        "query": "x",
        "user_id": "alice",
    }


def test_an_undeclared_scope_name_is_an_undeclared_argument() -> None:
    with pytest.raises(InvalidArguments, match="conversation_id: this argument is not declared"):
        pin_and_validate(TOOL, {"query": "x", "conversation_id": "c"}, {"user_id": "alice"})


def test_a_non_object_is_refused() -> None:
    with pytest.raises(InvalidArguments, match="expected a JSON object"):
        pin_and_validate(TOOL, ["x"], {})


def test_the_hash_is_canonical() -> None:
    assert args_hash({"a": 1, "b": [1, 2]}) == args_hash({"b": [1, 2], "a": 1})
    assert args_hash({"a": 1}) != args_hash({"a": 2})


def test_scope_arguments_are_hidden_from_the_schema_the_model_sees() -> None:
    schema = TOOL.parameters_schema()

    assert set(schema["properties"]) == {"query"}
    assert schema["required"] == ["query"]
    assert schema["additionalProperties"] is False


class TenantArgs(ToolArgs):
    query: str = Field(description="q")
    tenant_id: str | None = Field(default=None, description="pinned")
    user_id: str | None = Field(default=None, description="an ordinary argument here")


TENANT_TOOL: ServerTool[Any] = ServerTool(
    name="tenant", description="", args_model=TenantArgs, handler=_noop, scope_args=("tenant_id",)
)


def test_the_tool_decides_which_arguments_are_hidden_wherever_they_are_shown() -> None:
    args = {"query": "x", "tenant_id": "t1", "user_id": "bob"}

    assert visible_args(TENANT_TOOL, args) == {"query": "x", "user_id": "bob"}
    assert TENANT_TOOL.summary(TenantArgs(**args)) == "Run tenant(query='x', user_id='bob')"


def test_a_stored_call_shows_its_arguments_by_its_tools_rule() -> None:
    registry = ToolRegistry()
    registry.register(TENANT_TOOL)
    catalog = ToolCatalog(registry)

    shown = catalog.shown_args("tenant", {"query": "x", "tenant_id": "t1", "user_id": "bob"})

    assert shown == {"query": "x", "user_id": "bob"}


def test_a_stored_call_of_a_tool_no_longer_registered_hides_every_default_scope_name() -> None:
    shown = ToolCatalog(ToolRegistry()).shown_args(
        "gone", {"query": "x", "user_id": "alice", "workspace_id": "w", "conversation_id": "c"}
    )

    assert shown == {"query": "x"}
