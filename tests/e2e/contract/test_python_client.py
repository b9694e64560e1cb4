"""The Python client generated from openapi/openapi.json (openapi-python-client, see the
`sdk` fixture) reads our native streams with its generated event models.

Against a real chat-bff process: the generated operations create a conversation and send
messages (202 + `events_url`); the run's SSE is read through the client's own httpx client
(the generator has no stream reader), and each frame's `data` is parsed by the generated
model that the document's `RunEvent` discriminator names for the frame's `event:`. The
flow stops for an approval, decides it with the generated `decide_approval`, follows the
resumed run and lists the approvals inbox, now empty.
"""

from __future__ import annotations

import importlib
import json
import time
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import jwt
import pytest

from tests.e2e.conftest import PACKAGE, REPO, Launch, Service

pytestmark = pytest.mark.e2e

SECRET = "python-client-secret-0123456789-abcdefghij"
SPEC: dict[str, Any] = json.loads((REPO / "openapi" / "openapi.json").read_text())
# Event name -> generated model name, as the document's discriminator maps them.
EVENT_MODELS = {
    name: ref.rsplit("/", 1)[-1]
    for name, ref in SPEC["components"]["schemas"]["RunEvent"]["discriminator"]["mapping"].items()
}
ADA = (
    "add a Person node named Ada Lovelace and connect her to the Analytical Engine "
    "with a designed relation"
)


@pytest.fixture(scope="module")
def service(module_launch: Launch) -> Service:
    return module_launch(JWT_SECRET=SECRET, SCRIPTED_DELAY_MS="0", EXAMPLE_TOOLS_ENABLED="true")


def _op(name: str) -> Any:
    return importlib.import_module(f"{PACKAGE}.api.{name}")


def _token(user: str) -> str:
    now = int(time.time())
    claims = {"sub": user, "roles": ["user"], "iat": now, "exp": now + 600}
    return jwt.encode(claims, SECRET, algorithm="HS256")


def _frames(lines: Iterator[str]) -> Iterator[tuple[str, str]]:
    """(event, data) of each SSE frame; heartbeat comments are skipped."""
    event, data = "message", list[str]()
    for line in lines:
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = "message", []
        elif line.startswith("event:"):
            event = line.removeprefix("event:").strip()
        elif line.startswith("data:"):
            data.append(line.removeprefix("data:").removeprefix(" "))


def read_run(client: Any, events_url: str) -> list[Any]:
    """A run's events to `run_end`, each as the generated model of its event name."""
    models = importlib.import_module(f"{PACKAGE}.models")
    events: list[Any] = []
    httpx_client = client.get_httpx_client()
    with httpx_client.stream("GET", events_url, headers={"Accept": "text/event-stream"}) as r:
        assert r.status_code == 200, r.read()
        for name, data in _frames(r.iter_lines()):
            event = getattr(models, EVENT_MODELS[name]).from_dict(json.loads(data))
            assert event.type_ == name
            events.append(event)
            if isinstance(event, models.RunEnd):
                break
    return events


def test_the_generated_client_sends_reads_typed_events_and_decides(
    sdk: ModuleType, service: Service
) -> None:
    models = importlib.import_module(f"{PACKAGE}.models")
    with sdk.AuthenticatedClient(base_url=service.base_url, token=_token("pia")) as client:
        created = _op("conversations.create_conversation").sync(
            client=client, body=models.ConversationCreate(title="From Python")
        )
        assert isinstance(created, models.ConversationOut)
        send = _op("runs.send_message")

        started = send.sync(
            client=client, conversation_id=created.id, body=models.SendMessage(content=ADA)
        )
        assert isinstance(started, models.RunStarted), started
        first = read_run(client, started.events_url)

        assert isinstance(first[0], models.RunStart) and isinstance(first[-1], models.RunEnd)
        assert first[-1].status == models.RunEndStatus.COMPLETED
        ends = [e.part.data.tool_name for e in first if isinstance(e, models.ToolEnd)]
        assert ends == ["add_node", "add_node", "connect"]
        text = "".join(e.delta for e in first if isinstance(e, models.TextDeltaEvent))
        [message_end] = [e for e in first if isinstance(e, models.MessageEnd)]
        assert "designed" in text and message_end.message.role == "assistant"

        started = send.sync(
            client=client,
            conversation_id=created.id,
            body=models.SendMessage(content="delete Ada Lovelace"),
        )
        second = read_run(client, started.events_url)
        [confirm] = [e for e in second if isinstance(e, models.ConfirmRequired)]
        assert confirm.part.data.tool_name == "delete_node"
        assert second[-1].status == models.RunEndStatus.REQUIRES_ACTION

        decided = _op("approvals.decide_approval").sync(
            client=client,
            approval_id=confirm.approval_id,
            body=models.DecisionIn(decision=models.DecisionInDecision.APPROVE),
        )
        assert isinstance(decided, models.DecisionOut), decided
        resumed = read_run(client, decided.events_url)
        assert resumed[-1].status == models.RunEndStatus.COMPLETED

        inbox = _op("approvals.list_approvals").sync(client=client)
        assert isinstance(inbox, models.ApprovalList) and inbox.data == []
