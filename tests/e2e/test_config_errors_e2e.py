"""Configuration errors from real processes: `uvicorn app.main:app`, `python3 dev.py serve`
and the `chat-bff` command stop at once with status 78 and one line per problem on stderr,
naming the variable; no traceback, and no secret or bad value anywhere in their output."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from app.config_errors import EX_CONFIG
from app.settings import Settings
from tests.canary import Seen
from tests.e2e.conftest import REPO, free_port
from tests.support.broken_settings import ALL_CANARIES, all_field_errors, environment

pytestmark = pytest.mark.e2e

PRODUCTION_WITHOUT_AUTH = (
    "configuration error: JWT_SECRET: production needs authentication: set JWT_SECRET, "
    "JWT_PUBLIC_KEY, JWT_PUBLIC_KEY_FILE or JWT_JWKS_FILE"
)


def run(
    command: list[str], settings: dict[str, str], cwd: Path
) -> subprocess.CompletedProcess[str]:
    """`command` with exactly `settings` (nothing inherited that the service reads)."""
    names = {name.upper() for name in Settings.model_fields}
    env = {k: v for k, v in os.environ.items() if k.upper() not in names}
    env.update(settings, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
    return subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def uvicorn() -> list[str]:
    port = str(free_port())
    return [sys.executable, "-m", "uvicorn", "app.main:app", "--port", port]


def assert_refused(done: subprocess.CompletedProcess[str]) -> list[str]:
    """Exit 78, no traceback, no canary; returns the configuration error lines."""
    seen = Seen()
    seen.add("stdout", done.stdout)
    seen.add("stderr", done.stderr)
    assert seen.find(ALL_CANARIES) == []
    assert done.returncode == EX_CONFIG, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    return [line for line in done.stderr.splitlines() if line.startswith("configuration error")]


def test_uvicorn_in_production_without_auth_names_it_and_shows_no_key(tmp_path: Path) -> None:
    settings = environment({"ENVIRONMENT": "production", "JWT_SECRET": None})
    assert assert_refused(run(uvicorn(), settings, tmp_path)) == [PRODUCTION_WITHOUT_AUTH]


def test_uvicorn_reports_every_bad_setting_on_its_own_line(tmp_path: Path) -> None:
    broken = all_field_errors(tmp_path)
    lines = assert_refused(run(uvicorn(), environment(broken), tmp_path))
    named = {line.split(": ")[1].split("[")[0] for line in lines}
    assert named == set(broken)


def test_dev_py_serve_reports_the_error_the_same_way(tmp_path: Path) -> None:
    # dev.py as a developer runs it, minus installing the virtualenv (already done).
    serve = (
        "import pathlib, sys, dev; dev.ensure_env = lambda: None; "
        "dev.PY = pathlib.Path(sys.executable); sys.exit(dev.main(['serve']))"
    )
    settings = environment({"MODELS_JSON": "not json", "PORT": str(free_port())})
    lines = assert_refused(run([sys.executable, "-c", serve], settings, REPO))
    assert lines == ["configuration error: MODELS_JSON: not valid JSON (line 1 column 1)"]


def test_the_chat_bff_command_reports_the_error_the_same_way(tmp_path: Path) -> None:
    script = shutil.which("chat-bff", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("the chat-bff script is not installed in this environment")
    settings = environment({"ENVIRONMENT": "production", "JWT_SECRET": None})
    for command in ([script, "migrate"], [sys.executable, "-m", "app.cli", "migrate"]):
        assert assert_refused(run(command, settings, tmp_path)) == [PRODUCTION_WITHOUT_AUTH]
