"""The built-in page (`GET /`) in a real browser: tools, an approval, a reload, Stop.

`builtin_page.mjs` drives Debian's Chromium (playwright-core) over the page as a person
would, against a live chat-bff on the offline scripted model (its demo script plus long
answers; the harness is in conftest.py): a turn whose server tools show as finished cards; a
`delete_node` call that waits for a human, shown as a card with Approve/Reject in this tab
and in a second tab, approved in the page, the second tab seeing the decision live (the
conversation's follow stream, no reload), and then a question asked in the first tab; a
long answer reloaded half-way that resumes to the stored text; and Stop pressed half-way
through another, which keeps the answer as far as it got, marked stopped, leaves the page
idle and usable, and reads the same after a reload. Screenshots of each step are written
for the record (see conftest.py). Installation and skipping work as in
test_browser_eventsource.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

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

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def page_run(story_service: Service, drive: Drive) -> dict[str, Any]:
    return drive("builtin_page.mjs", story_service.base_url, story_service)


def test_the_page_runs_tools_approvals_and_resumes_after_a_reload(
    page_run: dict[str, Any],
) -> None:
    seen = page_run
    assert seen["errors"] == []
    assert seen["external"] == []  # nothing from a CDN or anywhere else
    assert len(seen["shots"]) == 12
    assert all(Path(p).stat().st_size > 1000 for p in seen["shots"])

    tools = seen["tools_turn"]["cards"]
    assert statuses(tools, "add_node") == ["success", "success"]
    assert statuses(tools, "connect") == ["success"]
    assert any("Done: Ada Lovelace" in t for t in seen["tools_turn"]["texts"])

    # The approval card shows in both tabs, is decided in the page, and the tool ran.
    assert statuses(seen["second_tab_before"], "delete_node") == ["waitingConfirmation"]
    assert statuses(seen["after_approval"]["cards"], "delete_node") == ["success"]
    assert any("The tool card shows what happened" in t for t in seen["after_approval"]["texts"])
    # The second tab got the decision and the answer after it live, on the conversation's
    # follow stream: no reload, no buttons left on the decided card.
    assert statuses(seen["second_tab_after"], "delete_node") == ["success"]
    assert seen["second_tab_reloads"] == 0
    assert seen["second_tab_buttons"] == 0
    assert any("The tool card shows what happened" in t for t in seen["second_tab_texts"])
    # A question asked in the first tab showed in the second, then its answer, live.
    question, answer = seen["second_tab_new"]
    assert question == {"role": "user", "text": "hello from the first tab"}
    assert answer["role"] == "assistant"
    assert answer["text"].startswith("Hello! I am chat-bff's offline scripted model")

    # Reloaded half-way, the answer resumed to exactly the stored text: no loss, no repeat.
    assert len(seen["before_reload"]) < len(STORY)
    assert seen["after_reload"] == STORY
    stored = seen["stored_last"]
    assert stored["role"] == "assistant"
    assert stored["content"][0]["data"]["text"] == STORY


def test_stop_keeps_the_answer_so_far_marked_stopped_and_the_page_usable(
    page_run: dict[str, Any],
) -> None:
    seen = page_run
    stopped = seen["stopped"]
    text = stopped["answer"]["text"]
    assert_cut_where_stop_landed(text)
    # Marked as stopped, not as an error; the page is idle (Stop hidden, Send enabled).
    assert stopped["answer"] == {"text": text, "mark": "Stopped.", "stopped": True}
    assert stopped["page"] == {"status": "Stopped.", "stop_hidden": True, "send_disabled": False}
    # Usable, and the same after a reload (the page reads the stored conversation).
    assert_usable_after_stop(seen, text, "Stopped.")
    assert seen["after_stop"]["page"] == {"status": "", "stop_hidden": True, "send_disabled": False}
    assert seen["stopped_reloaded"]["page"]["stop_hidden"] is True
    assert_stored_as_stopped(seen["stored_after_stop"], text)
