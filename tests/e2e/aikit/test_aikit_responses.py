"""Gravity UI AIKit's real OpenAI stream adapter renders our `/v1/responses` stream.

A real uvicorn process on a free loopback port serves a scripted model; `check.mjs` renders
AIKit's `useOpenAIStreamAdapter` (react-test-renderer) over a `fetch` Response from it and
prints the AIKit messages, which are asserted here. Skipped with the reason when `node` /
`npm` are missing or the pinned install (`setup.sh`, `npm ci`) cannot run; under `CI` a
failed install fails instead, so CI cannot go green without running the check.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.providers.scripted import Script, ScriptedError, ScriptedToolCall, ScriptedTurn
from tests.support.required import unavailable

pytestmark = pytest.mark.e2e

HERE = Path(__file__).parent
REPO = HERE.parents[2]
SCRIPT = Script(
    mode="rules",
    turns=[
        ScriptedTurn(match="^hello", thinking="Weighing a greeting.", text="Hello from chat-bff."),
        ScriptedTurn(
            match="^find",
            tool_calls=[ScriptedToolCall(id="call_find", name="find_nodes", args={"query": "x"})],
        ),
        ScriptedTurn(after_tool="find_nodes", text="Nothing matches x."),
        ScriptedTurn(
            match="^weather",
            text="Let me check.",
            tool_calls=[ScriptedToolCall(id="call_w", name="get_weather", args={"city": "Paris"})],
        ),
        ScriptedTurn(match="^fail", error=ScriptedError(status=400, message="refused upstream")),
        *[
            ScriptedTurn(
                match=f"^delete node {name}",
                tool_calls=[
                    ScriptedToolCall(
                        id=f"call_add_{name}",
                        name="add_node",
                        args={"label": "Thing", "name": name},
                    ),
                    ScriptedToolCall(id=f"call_del_{name}", name="delete_node", args={"id": name}),
                ],
            )
            for name in ("x", "y")
        ],
        ScriptedTurn(after_tool="delete_node", text="Deleted x."),
        ScriptedTurn(match="^Create a short title", text="A greeting"),
    ],
)


def _node_modules() -> None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for the AIKit check")
    modules = HERE / "node_modules"
    if (modules / "@gravity-ui" / "aikit").is_dir() and (modules / "openai").is_dir():
        return
    try:
        done = subprocess.run(
            ["sh", str(HERE / "setup.sh")], capture_output=True, text=True, timeout=300
        )
    except subprocess.TimeoutExpired:
        problem = "npm ci timed out"
    else:
        problem = "" if done.returncode == 0 else f"npm ci failed: {done.stderr[-2000:]}"
    if problem:
        unavailable(problem)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _bind(port: int) -> list[str]:
    return ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    script = tmp_path / "script.json"
    script.write_text(SCRIPT.model_dump_json())
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "JWT_"))
    }
    env.update(
        PYTHONPATH=str(REPO),
        ENVIRONMENT="test",
        DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'e2e.db'}",
        SCRIPTED_SCRIPT=str(script),
        SCRIPTED_DELAY_MS="2",
        EXAMPLE_TOOLS_ENABLED="true",
        DEFAULT_MODEL="scripted",
        LOG_JSON="false",
    )
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    log = tmp_path / "uvicorn.log"
    with log.open("wb") as errors:
        process = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "app.main:app", *_bind(port)],
            cwd=tmp_path,  # no developer .env is read
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=errors,
        )
    try:
        deadline = time.monotonic() + 90  # importing the vendor SDKs is slow on a busy machine
        while True:
            if process.poll() is not None:
                pytest.fail(f"uvicorn exited: {log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("uvicorn did not answer /healthz within 90 s")
            time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


@pytest.fixture
def aikit(server: str) -> dict[str, Any]:
    """What AIKit's adapter made of each scenario (see check.mjs)."""
    _node_modules()
    done = subprocess.run(
        ["node", str(HERE / "check.mjs"), server],
        cwd=HERE,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    results: dict[str, Any] = json.loads(done.stdout)
    return results


def _parts(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message["content"]
    if isinstance(content, str):
        return [{"type": "text", "data": {"text": content}}]
    parts: list[dict[str, Any]] = content
    return parts


def test_aikit_renders_our_stream(aikit: dict[str, Any]) -> None:
    """One node run checks every scenario; each block below is one behaviour."""
    # Thinking and text: one assistant message, the reasoning in a thinking part only.
    hello = aikit["hello"]
    assert (hello["status"], hello["error"]) == ("ready", None)
    assert hello["responseId"].startswith("resp_")
    [message] = hello["messages"]
    thinking, text = _parts(message)
    assert thinking["type"] == "thinking"
    assert thinking["data"]["content"] == "Weighing a greeting."
    assert thinking["data"]["status"] == "thought"
    assert text == {"type": "text", "data": {"text": "Hello from chat-bff."}}
    assert message["id"].startswith("msg_")  # AIKit adopted our message item id
    assert message["metadata"]["outputTokens"] > 0
    assert hello["onStreamEnd"] == hello["messages"]

    # A server tool that ran in our loop: a finished tool card, then the answer.
    server = aikit["server_tool"]
    assert server["status"] == "ready"
    [message] = server["messages"]
    tool, text = _parts(message)
    assert tool["type"] == "tool"
    assert tool["id"] == "call_find"
    assert (tool["data"]["toolName"], tool["data"]["status"]) == ("find_nodes", "success")
    assert "nodes" in tool["data"]["bodyContent"]
    assert json.loads(tool["data"]["mcpRequest"])["query"] == "x"
    assert text["data"]["text"] == "Nothing matches x."

    # A client tool: the text, then the call as a tool card for the page to act on.
    client = aikit["client_tool"]
    assert client["status"] == "ready"
    said, call = client["messages"]
    assert said["content"] == "Let me check."
    [tool] = _parts(call)
    assert tool["id"] == "call_w"
    assert tool["data"]["toolName"] == "get_weather"
    assert tool["data"]["status"] == "success"  # AIKit's reading of a completed function_call

    # The same client tool, opted in to submission requests: one card waiting for the page.
    submission = aikit["client_submission"]
    assert (submission["status"], submission["error"]) == ("ready", None)
    said, asked = submission["messages"]
    assert said["content"] == "Let me check."
    [card] = _parts(asked)
    assert card["id"] == "call_w"  # the call id: what the page's function_call_output names
    assert (card["data"]["toolName"], card["data"]["status"]) == (
        "get_weather",
        "waitingSubmission",
    )
    assert json.loads(card["data"]["headerContent"]) == {"city": "Paris"}

    # A tool that stopped to ask the user (our recorded stream for it): one card, waiting
    # for the user's submission, never a loading mcp_call beside it.
    question = aikit["question_recorded"]
    assert (question["status"], question["error"]) == ("ready", None)
    said, asked = question["messages"]
    assert said["content"] == "Checking."
    [card] = _parts(asked)
    assert card["id"] == "call_q1"  # the call id: what the submissions route takes
    assert (card["data"]["toolName"], card["data"]["status"]) == (
        "web__remove",
        "waitingSubmission",
    )
    assert json.loads(card["data"]["headerContent"]) == {"path": "a.txt"}

    # A failed run: AIKit ends in its error state, showing our message.
    failure = aikit["failure"]
    assert failure["status"] == "error"
    assert "refused upstream" in failure["error"]

    # The non-streaming answer through AIKit's response adapter: the same parts in one message.
    [whole] = aikit["non_stream"]
    assert [p["type"] for p in _parts(whole)] == ["tool", "text"]
    assert _parts(whole)[0]["data"]["status"] == "success"
    assert _parts(whole)[1]["data"]["text"] == "Nothing matches x."


def test_aikit_reads_our_conversation_list_as_its_chats(aikit: dict[str, Any]) -> None:
    listed = aikit["conversations"]["listed"]
    ids = aikit["conversations"]["ids"]
    chats = {chat["id"]: chat for chat in aikit["conversations"]["chats"]}

    assert set(chats) == {ids["named"], ids["untitled"]}
    assert chats[ids["named"]]["name"] == "Trip plans"
    # The title auto-set from the first user message is what the sidebar shows.
    assert chats[ids["untitled"]]["name"] == "hello from the sidebar test"
    assert chats[ids["untitled"]]["lastMessage"]
    for item in listed["data"]:
        created = chats[item["id"]]["createTime"]
        assert created.startswith(item["created_at_iso"][:19])


def test_aikits_server_helper_runs_a_conversation_through_v1_conversations(server: str) -> None:
    """AIKit's Node server helper (`OpenAIService`, over the official openai package) with
    `baseURL` at chat-bff: a conversation created, a streamed turn in it, its items paged,
    a title summarised, then deleted."""
    _node_modules()
    done = subprocess.run(
        ["node", str(HERE / "server_helper.mjs"), server],
        cwd=HERE,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    seen: dict[str, Any] = json.loads(done.stdout)

    conversation = seen["conversation"]
    assert conversation["object"] == "conversation"
    assert conversation["metadata"] == {"topic": "aikit"}
    assert seen["finished"] is True
    assert seen["events"][0] == "response.created"
    assert seen["events"][-1] == "response.completed"
    assert seen["text"] == "Hello from chat-bff."
    # Both messages of the turn, one page at a time, in order.
    messages = [i for i in seen["items"] if i["type"] == "message"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert "Hello from chat-bff." in json.dumps(messages[1]["content"])
    assert seen["title"] == "A greeting"
    assert seen["retrieved"]["id"] == conversation["id"]
    assert seen["afterDelete"] == 404


def test_aikit_renders_an_approval_and_its_answer(aikit: dict[str, Any]) -> None:
    """mcp_approval_request -> the page's mcp_approval_response -> mcp_call completed."""
    paused = aikit["approval_paused"]
    assert paused["status"] == "ready"
    [message] = paused["messages"]
    cards = [(p["data"]["toolName"], p["data"]["status"]) for p in _parts(message)]
    # The paused call is one card, waiting: never a loading mcp_call beside it.
    assert cards == [("add_node", "success"), ("delete_node", "waitingConfirmation")]
    waiting = _parts(message)[1]
    assert waiting["id"].startswith("appr_")  # the card is the approval's, to answer
    assert json.loads(waiting["data"]["headerContent"]) == {"id": "y"}

    answered = aikit["approval_answered"]
    assert (answered["status"], answered["error"]) == ("ready", None)
    [message] = answered["messages"]
    call, text = _parts(message)
    assert call["id"] == "call_del_x"
    assert (call["data"]["toolName"], call["data"]["status"]) == ("delete_node", "success")
    assert "deleted" in call["data"]["bodyContent"]
    assert text["data"]["text"] == "Deleted x."

    replayed = aikit["approval_replayed"]
    assert replayed["status"] == 409
    assert replayed["body"]["error"]["code"] == "already_decided"
