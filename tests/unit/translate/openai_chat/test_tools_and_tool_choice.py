"""Function tools and tool choice, read from a client and written for a model."""

from __future__ import annotations

from typing import Any

import pytest

from app.domain.errors import InvalidRequest
from app.domain.stream import NamedToolChoice, ToolSpec
from app.translate.openai_chat.read import tool_choice_from_openai, tools_from_openai
from app.translate.openai_chat.write import tool_choice_to_openai, tools_to_openai


def test_client_tools_are_read_from_openai_function_tools() -> None:
    (spec,) = tools_from_openai(
        [
            {
                "type": "function",
                "function": {
                    "name": "get_capital",
                    "description": "Capital of a country.",
                    "parameters": {"type": "object", "properties": {"country": {"type": "string"}}},
                    "strict": True,
                },
            }
        ]
    )
    assert spec.name == "get_capital"
    assert spec.parameters["properties"] == {"country": {"type": "string"}}


@pytest.mark.parametrize(
    "tools",
    [
        pytest.param({"type": "function"}, id="not-a-list"),
        pytest.param([{"type": "retrieval"}], id="not-a-function"),
        pytest.param([{"type": "function"}], id="no-function"),
        pytest.param([{"type": "function", "function": {"name": "has space"}}], id="bad-name"),
        pytest.param(
            [{"type": "function", "function": {"name": "t", "parameters": "x"}}], id="bad-schema"
        ),
        pytest.param([{"type": "function", "function": {"name": "t"}}] * 2, id="duplicate-names"),
    ],
)
def test_malformed_client_tools_are_refused(tools: Any) -> None:
    with pytest.raises(InvalidRequest):
        tools_from_openai(tools)


def test_tool_specs_become_openai_function_tools() -> None:
    spec = ToolSpec(name="t", description="d", parameters={"type": "object", "properties": {}})
    assert tools_to_openai([spec]) == [
        {
            "type": "function",
            "function": {"name": "t", "description": "d", "parameters": spec.parameters},
        }
    ]


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        pytest.param(None, None, id="unset"),
        pytest.param("auto", "auto", id="auto"),
        pytest.param("required", "required", id="required"),
        pytest.param(
            NamedToolChoice(name="t"), {"type": "function", "function": {"name": "t"}}, id="named"
        ),
    ],
)
def test_tool_choice_maps_both_ways(choice: Any, wire: Any) -> None:
    assert tool_choice_to_openai(choice) == wire
    assert tool_choice_from_openai(wire) == choice
