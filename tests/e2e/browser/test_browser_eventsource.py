"""A real browser's plain EventSource follows a chat-bff run, resumes after a drop, and stops.

`eventsource.mjs` drives Debian's Chromium (`/usr/bin/chromium`) with playwright-core over
a page that does what a hand-written UI does: POST a conversation and a message (202
`{run_id, events_url}`), then `new EventSource(events_url)` listening for the native event
names. The browser reaches chat-bff through a TCP relay on another loopback port; a few
text deltas in, the relay resets every connection (a network drop), and Chromium's
EventSource reconnects on its own with Last-Event-ID. After `run_end` the server closes the
stream; the EventSource reconnects once more and the 204 must leave it CLOSED.

The page is fulfilled by Playwright (`page.route`) at a URL of the same origin as the API,
so nothing is added to the app and no CORS is involved.

Installation is `setup.sh` (apt-get's chromium when /usr/bin/chromium is absent, then
`npm ci`), run when node_modules or the browser is missing. Skipped with the reason when
node/npm/apt cannot provide them; under `CI` it fails instead, so CI cannot go green
without running the browser.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.providers.scripted import Script, ScriptedTurn
from tests.e2e.conftest import Launch
from tests.support.required import unavailable

pytestmark = pytest.mark.e2e

HERE = Path(__file__).parent
CHROMIUM = Path("/usr/bin/chromium")
# 160 words at 30 ms a word: the run lasts ~5 s, longer than Chromium's default 3 s
# reconnection delay, so the resumed stream replays what was missed and then follows live.
ANSWER = " ".join(f"word{i}" for i in range(160)) + "."
PROMPT = "tell me a long story"
NATIVE = {
    "run_start",
    "text_delta",
    "thinking_delta",
    "tool_start",
    "tool_args_delta",
    "confirm_required",
    "tool_end",
    "tool_error",
    "message_end",
    "run_end",
    "error",
}


def _installed() -> bool:
    return CHROMIUM.is_file() and (HERE / "node_modules" / "playwright-core").is_dir()


def _prepare() -> None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        unavailable("node and npm are needed for the browser EventSource check")
    if _installed():
        return
    if not CHROMIUM.is_file() and shutil.which("apt-get") is None:
        unavailable(f"{CHROMIUM} is missing and apt-get is not available to install it")
    try:
        done = subprocess.run(
            ["sh", str(HERE / "setup.sh")], capture_output=True, text=True, timeout=600
        )
    except subprocess.TimeoutExpired:
        unavailable("setup.sh (apt-get install chromium, npm ci) timed out")
        return
    if done.returncode != 0 or not _installed():
        unavailable(f"setup.sh failed ({done.returncode}): {done.stderr[-2000:]}")


@pytest.fixture
def browser_run(launch: Launch, tmp_path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """What the page saw (see eventsource.mjs) and the conversation as stored afterwards."""
    _prepare()
    script = tmp_path / "script.json"
    script.write_text(Script(mode="rules", turns=[ScriptedTurn(text=ANSWER)]).model_dump_json())
    service = launch(SCRIPTED_DELAY_MS="30", SCRIPTED_SCRIPT=str(script), DEFAULT_MODEL="scripted")
    done = subprocess.run(
        ["node", str(HERE / "eventsource.mjs"), service.base_url, PROMPT],
        cwd=HERE,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, (
        f"{done.stderr[-4000:]}\n--- service log ---\n{service.logs()[-3000:]}"
    )
    seen: dict[str, Any] = json.loads(done.stdout)
    cid = seen["start"]["conversation_id"]
    stored = httpx.get(f"{service.base_url}/api/conversations/{cid}", timeout=10)
    assert stored.status_code == 200, stored.text
    detail: dict[str, Any] = stored.json()
    return seen, detail


def test_eventsource_follows_resumes_and_stops(
    browser_run: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    seen, detail = browser_run
    started = seen["start"]
    assert started["status"] == 202
    assert started["started"]["run_id"].startswith("run_")
    events = seen["seen"]
    assert {e["type"] for e in events} <= NATIVE

    # Gap-free 1..N, no duplicates across the drop: the resume picked up exactly after.
    ids = [int(e["id"]) for e in events]
    assert ids == list(range(1, len(ids) + 1)), ids
    assert events[0]["type"] == "run_start"
    assert events[-1]["type"] == "run_end"
    assert events[-1]["data"]["status"] == "completed"
    assert [e["type"] for e in events].count("run_end") == 1

    # The text the page assembled is the stored assistant message.
    text = "".join(e["data"]["delta"] for e in events if e["type"] == "text_delta")
    assert text == ANSWER
    [answer] = [m for m in detail["messages"] if m["role"] == "assistant"]
    assert [p["type"] for p in answer["content"]] == ["text"]
    assert answer["content"][0]["data"]["text"] == text
    assert detail["active_run_id"] is None

    # The drop was real and mid-run, and the browser itself resumed with Last-Event-ID.
    [drop] = seen["drops"]
    assert drop["connections"] >= 1
    # Frames already in the browser's buffers when the relay reset still get parsed, so
    # the page's last id at the error can be a little past what it showed at the drop.
    dropped_at = seen["seen_after_drop"]
    assert 4 <= int(drop["last_id_seen"]) <= dropped_at < len(ids) - 10
    assert seen["ready_state_after_drop"] == 0  # CONNECTING: the browser will retry
    first, resumed, after_end = seen["requests"]
    assert first["last_event_id"] is None
    assert resumed["last_event_id"] == str(dropped_at)
    assert after_end["last_event_id"] == str(len(ids))
    statuses = [r.get("status", r.get("failed")) for r in seen["responses"]]
    assert statuses == [200, "net::ERR_CONNECTION_RESET", 200, 204], statuses

    # After the replay the resumed stream followed the run live (events kept arriving).
    reopened = [s["t"] for s in seen["states"] if s["what"] == "open"][1]
    later = [e["t"] - reopened for e in events if int(e["id"]) > dropped_at]
    assert max(later) > 300, later

    # run_end, the server closes, one reconnect gets 204: CLOSED, and nothing after.
    assert seen["final_ready_state"] == 2
    last = seen["states"][-1]
    assert (last["what"], last["readyState"]) == ("error", 2)
    assert seen["requests_after_closed"] == 0
    assert seen["opens"] == 2
