"""The built-in page (`GET /`) in a real browser: tools, an approval, a reload mid-answer.

`builtin_page.mjs` drives Debian's Chromium (playwright-core) over the page as a person
would, against a live chat-bff on the offline scripted model (its demo script plus one
long answer): a turn whose server tools show as finished cards; a `delete_node` call that
waits for a human, shown as a card with Approve/Reject in this tab and in a second tab,
approved in the page, the second tab seeing the decision live (the conversation's follow
stream, no reload); and a long answer reloaded half-way that resumes to the stored text.
Screenshots of each step are written to a temporary folder (printed on failure) for the
record. Installation and skipping work as in test_browser_eventsource.py.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from app.providers.scripted import Script, ScriptedTurn, load_script
from tests.e2e.browser.test_browser_eventsource import _prepare
from tests.e2e.conftest import Launch

pytestmark = pytest.mark.e2e

HERE = Path(__file__).parent
STORY = " ".join(f"word{i}" for i in range(300)) + "."


@pytest.fixture
def page_run(launch: Launch, tmp_path: Path) -> dict[str, Any]:
    _prepare()
    demo = load_script(None)
    script = Script(mode="rules", turns=[ScriptedTurn(match=r"\bstory\b", text=STORY), *demo.turns])
    path = tmp_path / "script.json"
    path.write_text(script.model_dump_json())
    service = launch(
        SCRIPTED_DELAY_MS="30",
        SCRIPTED_SCRIPT=str(path),
        DEFAULT_MODEL="scripted",
        EXAMPLE_TOOLS_ENABLED="true",
    )
    shots = tmp_path / "screenshots"
    shots.mkdir()
    done = subprocess.run(
        ["node", str(HERE / "builtin_page.mjs"), service.base_url],
        cwd=HERE,
        capture_output=True,
        text=True,
        timeout=150,
        env={**os.environ, "SCREENSHOTS": str(shots)},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    seen: dict[str, Any] = json.loads(done.stdout)
    assert "failure" not in seen, (
        f"{seen['failure']}\nscreenshots: {shots}\n--- service log ---\n{service.logs()[-3000:]}"
    )
    return seen


def _statuses(cards: list[dict[str, Any]], name: str) -> list[str]:
    return [c["status"] for c in cards if c["name"] == name]


def test_the_page_runs_tools_approvals_and_resumes_after_a_reload(
    page_run: dict[str, Any],
) -> None:
    seen = page_run
    assert seen["errors"] == []
    assert seen["external"] == []  # nothing from a CDN or anywhere else
    assert len(seen["shots"]) == 7
    assert all(Path(p).stat().st_size > 1000 for p in seen["shots"])

    tools = seen["tools_turn"]["cards"]
    assert _statuses(tools, "add_node") == ["success", "success"]
    assert _statuses(tools, "connect") == ["success"]
    assert any("Done: Ada Lovelace" in t for t in seen["tools_turn"]["texts"])

    # The approval card shows in both tabs, is decided in the page, and the tool ran.
    assert _statuses(seen["second_tab_before"], "delete_node") == ["waitingConfirmation"]
    assert _statuses(seen["after_approval"]["cards"], "delete_node") == ["success"]
    assert any("The tool card shows what happened" in t for t in seen["after_approval"]["texts"])
    # The second tab got the decision and the answer after it live, on the conversation's
    # follow stream: no reload, no buttons left on the decided card.
    assert _statuses(seen["second_tab_after"], "delete_node") == ["success"]
    assert seen["second_tab_reloads"] == 0
    assert seen["second_tab_buttons"] == 0
    assert any("The tool card shows what happened" in t for t in seen["second_tab_texts"])

    # Reloaded half-way, the answer resumed to exactly the stored text: no loss, no repeat.
    assert len(seen["before_reload"]) < len(STORY)
    assert seen["after_reload"] == STORY
    stored = seen["stored_last"]
    assert stored["role"] == "assistant"
    assert stored["content"][0]["data"]["text"] == STORY
