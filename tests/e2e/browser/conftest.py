"""The harness the page tests share: a live chat-bff on the offline scripted model (its demo
script, a long story and a longer saga), and `drive`, which runs one of the `.mjs` scripts
in Debian's Chromium against a page and hands back what it saw.

Screenshots of every step go to `$SCREENSHOTS_DIR/<page>` when that is set (the folder is
emptied first, so it holds one run), else to a temporary folder; the path is printed, and
named in every failure.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from app.providers.scripted import Script, ScriptedTurn, load_script
from tests.e2e.browser.pages import SAGA, STORY
from tests.e2e.browser.test_browser_eventsource import _prepare
from tests.e2e.conftest import Launch, Service

HERE = Path(__file__).parent

# (script, page URL, service) -> what the script printed
Drive = Callable[[str, str, Service], dict[str, Any]]


@pytest.fixture(scope="module")
def story_service(module_launch: Launch, tmp_path_factory: pytest.TempPathFactory) -> Service:
    """chat-bff on the demo script plus two long answers (`story`, `saga`), 30 ms a word,
    with Chromium and playwright-core installed for the page to be driven. Module-wide: a
    page's run is driven once and its report read by several tests."""
    _prepare()
    tmp_path = tmp_path_factory.mktemp("script")
    demo = load_script(None)
    long_answers = [
        ScriptedTurn(match=r"\bsaga\b", text=SAGA),
        ScriptedTurn(match=r"\bstory\b", text=STORY),
    ]
    script = Script(mode="rules", turns=[*long_answers, *demo.turns])
    path = tmp_path / "script.json"
    path.write_text(script.model_dump_json())
    return module_launch(
        SCRIPTED_DELAY_MS="30",
        SCRIPTED_SCRIPT=str(path),
        DEFAULT_MODEL="scripted",
        EXAMPLE_TOOLS_ENABLED="true",
    )


@pytest.fixture(scope="module")
def screenshots(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`$SCREENSHOTS_DIR/<page>` (emptied) or a temporary folder, named after the test module
    (`test_builtin_page` -> `builtin-page`)."""
    page = request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_").replace("_", "-")
    root = os.environ.get("SCREENSHOTS_DIR")
    shots = Path(root) / page if root else tmp_path_factory.mktemp(f"{page}-screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    for old in shots.glob("*.png"):
        old.unlink()
    print(f"screenshots: {shots}")
    return shots


@pytest.fixture(scope="module")
def drive(screenshots: Path) -> Drive:
    def run(script: str, url: str, service: Service) -> dict[str, Any]:
        done = subprocess.run(
            ["node", str(HERE / script), url],
            cwd=HERE,
            capture_output=True,
            text=True,
            timeout=240,
            env={**os.environ, "SCREENSHOTS": str(screenshots)},
        )
        assert done.returncode == 0, done.stderr[-4000:]
        seen: dict[str, Any] = json.loads(done.stdout)
        assert "failure" not in seen, (
            f"{seen['failure']}\nscreenshots: {screenshots}\n--- browser console ---\n"
            f"{done.stderr[-3000:]}\n--- service log ---\n{service.logs()[-3000:]}"
        )
        return seen

    return run
