"""The registry and tool modules: the example where it is on, deployer modules,
allow/deny lists, roles."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from app.container_tools import build_tool_catalog, tool_modules
from app.domain.identity import Caller
from app.settings import Settings
from app.tools.access import ToolAccess
from app.tools.base import ServerTool, ToolArgs, ToolContext
from app.tools.modules import load_tool_modules
from app.tools.registry import ToolRegistry

GRAPH_TOOLS = {"find_nodes", "get_graph", "add_node", "connect", "set_property", "delete_node"}
USER = Caller(user_id="u", roles=frozenset({"user"}))
ADMIN = Caller(user_id="a", roles=frozenset({"admin"}))


def _settings(**values: Any) -> Settings:
    return Settings(_env_file=None, **values)


async def _noop(args: BaseModel, ctx: ToolContext) -> None:
    return None


def _tool(name: str, args_model: type[BaseModel] = ToolArgs) -> ServerTool[Any]:
    return ServerTool(name=name, description="", args_model=args_model, handler=_noop)


def _names(settings: Settings) -> set[str]:
    return {t.name for t in build_tool_catalog(settings).registry.all()}


def test_the_example_tools_are_on_in_development_and_off_elsewhere() -> None:
    assert _names(_settings(environment="development")) == GRAPH_TOOLS
    assert _names(_settings(environment="test")) == set()
    assert _names(_settings(environment="test", example_tools_enabled=True)) == GRAPH_TOOLS
    assert _names(_settings(environment="development", example_tools_enabled=False)) == set()


def test_the_example_is_loaded_like_any_tool_module_and_first() -> None:
    settings = _settings(environment="development", tool_modules=["tests.support.sample_tools"])

    assert tool_modules(settings) == ["app.examples.graph", "tests.support.sample_tools"]


def test_deployer_modules_register_their_own_tools() -> None:
    registry = ToolRegistry()
    load_tool_modules(registry, ["tests.unit.tools.deployer_tools"])

    tool = registry.get("restart_service")
    assert tool is not None and tool.policy == "confirm"


def test_tool_modules_are_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOL_MODULES", '["tests.unit.tools.deployer_tools"]')
    monkeypatch.setenv("TOOL_DENY", '["restart_*"]')

    catalog = build_tool_catalog(_settings(environment="test"))

    assert "restart_service" in catalog.registry
    assert not catalog.knows("restart_service")


def test_a_module_without_register_is_a_clear_start_up_error() -> None:
    with pytest.raises(ValueError, match="has no register"):
        load_tool_modules(ToolRegistry(), ["app.tools.base"])


def test_a_tool_whose_arguments_allow_extra_fields_is_refused() -> None:
    class Loose(BaseModel):
        x: int = 0

    with pytest.raises(ValueError, match="forbid extra"):
        ToolRegistry().register(_tool("loose", Loose))


def test_names_must_be_unique_and_model_safe() -> None:
    registry = ToolRegistry()
    registry.register(_tool("a"))
    with pytest.raises(ValueError, match="twice"):
        registry.register(_tool("a"))
    with pytest.raises(ValueError, match="must match"):
        registry.register(_tool("rm -rf"))


def test_roles_keep_a_tool_from_callers_without_them() -> None:
    access = ToolAccess()
    admin_only = ServerTool(
        name="x", description="", args_model=ToolArgs, handler=_noop, roles=frozenset({"admin"})
    )

    assert not access.permits(admin_only, USER)
    assert access.permits(admin_only, ADMIN)


def test_deny_wins_over_allow_and_model_lists_apply_per_model() -> None:
    access = ToolAccess(
        allow=("*",),
        deny=("admin_*",),
        model_allow={"small": ("find_*",)},
        model_deny={"big": ("delete_*",)},
    )

    assert not access.permits(_tool("admin_reset"), ADMIN, "big")
    assert access.permits(_tool("find_nodes"), USER, "small")
    assert not access.permits(_tool("add_node"), USER, "small")
    assert not access.permits(_tool("delete_node"), USER, "big")
    assert access.permits(_tool("delete_node"), USER, "other")
