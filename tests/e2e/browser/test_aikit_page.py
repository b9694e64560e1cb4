"""The AIKit example (examples/aikit-chat) in a real browser: tools, an approval, a reload,
Stop.

The example is installed from its package-lock.json (`npm ci`, from the npm cache when
warm), built with `vite build`, and served by `vite preview`, which forwards /api and /v1 to
a live chat-bff on the offline scripted model (its demo script plus long answers).
`aikit_page.mjs` drives Debian's Chromium (playwright-core) over it as a person would: the
History list; a turn whose server tools show as finished cards; a `delete_node` call waiting
for a human, shown as a card with Accept/Reject in this tab and in a second tab, accepted in
the page (an `mcp_approval_response` on /v1/responses) and seen as done in the second tab
without a reload (it follows the conversation's events); a long answer reloaded half-way
that resumes to the stored text; and Stop pressed half-way through another, which keeps the
answer as far as it got, marked stopped, leaves the page idle and usable, and reads the
same after a reload. The service and the screenshots of each step come from conftest.py.
Skips locally without Node or Chromium, fails under `CI` (as the built-in page's test).
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.browser.conftest import Drive
from tests.e2e.browser.pages import (
    STORY,
    assert_cut_where_stop_landed,
    assert_stored_as_stopped,
    assert_usable_after_stop,
    statuses,
)
from tests.e2e.conftest import Service
from tests.support.required import unavailable

pytestmark = pytest.mark.e2e

HERE = Path(__file__).parent
EXAMPLE = HERE.parents[2] / "examples" / "aikit-chat"
VITE = EXAMPLE / "node_modules" / "vite" / "bin" / "vite.js"


def _npm(*args: str, timeout: float) -> None:
    try:
        done = subprocess.run(
            ["npm", *args], cwd=EXAMPLE, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        unavailable(f"npm {args[0]} in examples/aikit-chat timed out")
    if done.returncode != 0:
        unavailable(f"npm {args[0]} failed ({done.returncode}): {done.stderr[-2000:]}")


def _node_is_new_enough() -> None:
    done = subprocess.run(["node", "--version"], capture_output=True, text=True, timeout=30)
    major, minor = (int(n) for n in done.stdout.strip().lstrip("v").split(".")[:2])
    if (major, minor) < (20, 19):
        unavailable(f"Vite 8 needs Node 20.19 or newer, this is {done.stdout.strip()}")


def _build() -> Path:
    """Install the example as its lock file says (unless already installed from it), build."""
    _node_is_new_enough()
    installed = EXAMPLE / "node_modules" / ".package-lock.json"
    lock = EXAMPLE / "package-lock.json"
    if not installed.is_file() or installed.stat().st_mtime < lock.stat().st_mtime:
        _npm("ci", "--no-audit", "--no-fund", "--prefer-offline", timeout=150)
    done = subprocess.run(
        ["node", str(VITE), "build", "--logLevel", "warn"],
        cwd=EXAMPLE,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return EXAMPLE / "dist"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def preview(
    story_service: Service, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Service]]:
    """`vite preview` of the built example in front of a live chat-bff."""
    _build()
    port = _free_port()
    args = ["preview", "--host", "127.0.0.1", "--port", str(port), "--strictPort"]
    log_path = tmp_path_factory.mktemp("vite") / "vite.log"
    log = log_path.open("wb")
    process = subprocess.Popen(
        ["node", str(VITE), *args],
        cwd=EXAMPLE,
        env={**os.environ, "CHAT_BFF_URL": story_service.base_url},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, log_path.read_text()[-2000:]
            try:
                if httpx.get(f"{base}/api/conversations", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "vite preview did not answer within 30 s"
            time.sleep(0.2)
        yield base, story_service
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


@pytest.fixture(scope="module")
def page_run(preview: tuple[str, Service], drive: Drive) -> dict[str, Any]:
    base, service = preview
    created = httpx.post(f"{base}/api/conversations", json={"title": "Earlier plans"})
    assert created.status_code == 201, created.text
    return drive("aikit_page.mjs", base, service)


def test_the_aikit_example_runs_tools_approvals_and_resumes_after_a_reload(
    page_run: dict[str, Any],
) -> None:
    seen = page_run
    assert seen["errors"] == []
    assert seen["external"] == []  # nothing from a CDN: the build is self-contained
    assert len(seen["shots"]) == 12
    assert all(Path(p).stat().st_size > 1000 for p in seen["shots"])

    assert "Earlier plans" in seen["history"]

    tools = seen["tools_turn"]["cards"]
    assert statuses(tools, "add_node") == ["success", "success"]
    assert statuses(tools, "connect") == ["success"]
    assert any("Done: Ada Lovelace" in t for t in seen["tools_turn"]["texts"])

    # The approval card asks in both tabs, is accepted in the page, and the tool ran.
    [asked] = [c for c in seen["approval_asked"] if c["name"] == "delete_node"]
    assert asked["status"] == "waitingConfirmation"
    assert {"Accept", "Reject"} <= set(asked["buttons"])
    assert statuses(seen["second_tab_before"], "delete_node") == ["waitingConfirmation"]
    assert statuses(seen["after_approval"]["cards"], "delete_node") == ["success"]
    assert any("The tool card shows what happened" in t for t in seen["after_approval"]["texts"])
    assert statuses(seen["second_tab_after"], "delete_node") == ["success"]

    # Reloaded half-way, the answer resumed to exactly the stored text: no loss, no repeat.
    assert len(seen["before_reload"]) < len(STORY)
    assert seen["resumed_while_running"]
    assert seen["after_reload"] == STORY
    stored = seen["stored_last"]
    assert stored["role"] == "assistant"
    assert stored["content"][0]["data"]["text"] == STORY


def test_stop_keeps_the_answer_so_far_marked_stopped_and_the_page_usable(
    page_run: dict[str, Any],
) -> None:
    seen = page_run
    answer, page = seen["stopped"]["answer"], seen["stopped"]["page"]
    # Marked as stopped, not shown as an error; the page is idle.
    assert answer["mark"] == "Stopped"
    assert page == {"status": "ready", "error_alerts": 0}
    text = answer["text"]
    assert_cut_where_stop_landed(text)
    # Usable, and the same after a reload (the page reads the stored conversation).
    assert_usable_after_stop(seen, text, "Stopped")
    assert seen["after_stop"]["page"] == {"status": "ready", "error_alerts": 0}
    assert seen["stopped_reloaded"]["page"] == {"status": "ready", "error_alerts": 0}
    assert_stored_as_stopped(seen["stored_after_stop"], text)
