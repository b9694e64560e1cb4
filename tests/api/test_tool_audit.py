"""Mutating tool calls are audited: tool, arguments digest, outcome; never the arguments."""

from __future__ import annotations

from app.providers.scripted import Script, ScriptedProvider, ScriptedToolCall, ScriptedTurn
from app.settings import Settings
from tests.fakes.db import MakeApi


async def test_a_mutating_tool_call_leaves_an_audit_record_without_its_arguments(
    make_api: MakeApi, app_settings: Settings
) -> None:
    secretish = "Ada Lovelace, born 1815"
    turns = [
        ScriptedTurn(
            tool_calls=[
                ScriptedToolCall(name="add_node", args={"label": "Person", "name": secretish}),
                ScriptedToolCall(name="find_nodes", args={"query": "Ada"}),
            ]
        ),
        ScriptedTurn(text="Added."),
    ]
    provider = ScriptedProvider(Script(mode="sequence", turns=turns), delay_ms=0)
    settings = app_settings.model_copy(update={"example_tools_enabled": True})
    async with make_api(settings, providers={"scripted": provider}) as api:
        cid = (await api.post("/api/conversations", json={})).json()["id"]
        sent = await api.post(
            f"/api/conversations/{cid}/messages",
            json={"content": "add Ada"},
            headers={"accept": "text/event-stream"},
        )
        assert "event: run_end" in sent.text
        audit = (await api.get("/api/admin/audit")).json()

    calls = [e for e in audit["data"] if e["action"] == "tool.call"]
    assert [c["target_id"] for c in calls] == ["add_node"]  # reads are not audited
    [call] = calls
    assert call["details"]["outcome"] == "success"
    assert call["details"]["conversation_id"] == cid
    assert len(call["details"]["args_digest"]) == 64
    assert secretish not in str(audit)
