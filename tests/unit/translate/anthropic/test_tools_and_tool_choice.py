"""Tool specs and tool choice written as Anthropic's tool definitions and `tool_choice`."""

from __future__ import annotations

from typing import Any

import pytest

from app.domain.stream import NamedToolChoice, ToolChoice, ToolSpec
from app.translate.anthropic.write import tool_choice_to_anthropic, tools_to_anthropic


def test_tool_specs_become_tools_with_an_input_schema() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    tools = [
        ToolSpec(name="weather", description="Weather now", parameters=schema),
        ToolSpec(name="now"),
    ]
    assert tools_to_anthropic(tools) == [
        {"name": "weather", "description": "Weather now", "input_schema": schema},
        {"name": "now", "input_schema": {"type": "object", "properties": {}}},
    ]


@pytest.mark.parametrize(
    ("choice", "parallel", "expected"),
    [
        pytest.param(None, None, None, id="none-given-means-the-default"),
        pytest.param("auto", None, {"type": "auto"}, id="auto"),
        pytest.param("required", None, {"type": "any"}, id="required-is-any"),
        pytest.param("none", None, {"type": "none"}, id="none"),
        pytest.param(
            NamedToolChoice(name="weather"), None, {"type": "tool", "name": "weather"}, id="named"
        ),
        pytest.param(
            None,
            False,
            {"type": "auto", "disable_parallel_tool_use": True},
            id="no-parallel-calls-without-a-choice",
        ),
        pytest.param(
            "required",
            False,
            {"type": "any", "disable_parallel_tool_use": True},
            id="no-parallel-calls-with-required",
        ),
    ],
)
def test_tool_choice_translation(
    choice: ToolChoice | None, parallel: bool | None, expected: dict[str, Any] | None
) -> None:
    assert tool_choice_to_anthropic(choice, parallel_tool_calls=parallel) == expected
