"""The scripted model of the stored-response tests: `stall ...` runs until cancelled,
`hello ...` answers at once."""

from __future__ import annotations

from app.providers.scripted import Script, ScriptedProvider, ScriptedTurn
from tests.fakes.db import ApiClient

HELLO = "Hello from chat-bff."
SCRIPT = Script(
    mode="rules",
    turns=[
        # Far longer than any test: only a cancel ends this run before the test does.
        ScriptedTurn(match="^stall", stall_seconds=600.0, text="Never said."),
        ScriptedTurn(match="^hello", text=HELLO),
    ],
)


def use_stalling_model(api: ApiClient) -> None:
    """`scripted`, for every later request to `api`, is this script."""
    api.services.providers["scripted"] = ScriptedProvider(SCRIPT, delay_ms=0)
