"""A TypeScript client generated from openapi/openapi.json reads our streams, typed.

openapi-typescript turns the committed document into types (`gen/api.d.ts`); `tsc` (strict)
must accept `src/flow.ts`, which switches exhaustively on the native event union, and must
refuse `src/wrong.ts`, which names an event that does not exist and reads a field an event
does not carry. Compiled, the flow runs against a real chat-bff process: it creates a
conversation, reads a run with server tools to `run_end`, reads a run that stops for an
approval, decides it, follows the resumed run and lists. Skipped with the reason when
`node`/`npm` are missing or the pinned install (`setup.sh`) cannot run; under `CI` that
fails instead.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import jwt
import pytest

from tests.e2e.conftest import REPO, Launch, Service
from tests.support.required import unavailable

pytestmark = pytest.mark.e2e

HERE = Path(__file__).parent
SECRET = "typescript-client-secret-0123456789-abcdefg"
BIN = HERE / "node_modules" / ".bin"


def _prepare() -> None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        unavailable("node and npm are needed for the TypeScript client")
    if (BIN / "tsc").exists() and (BIN / "openapi-typescript").exists():
        return
    try:
        done = subprocess.run(
            ["sh", str(HERE / "setup.sh")], capture_output=True, text=True, timeout=300
        )
    except subprocess.TimeoutExpired:
        unavailable("setup.sh (npm ci) timed out")
        return
    if done.returncode != 0:
        unavailable(f"setup.sh failed ({done.returncode}): {done.stderr[-2000:]}")


def _run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(args), cwd=HERE, capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture(scope="module")
def compiled() -> Path:
    """Types generated from the committed document, the flow compiled by strict `tsc`."""
    _prepare()
    generated = _run(
        str(BIN / "openapi-typescript"),
        str(REPO / "openapi" / "openapi.json"),
        "--output",
        "gen/api.d.ts",
        # Request fields with a default stay optional (`mode` of a new conversation).
        "--default-non-nullable",
        "false",
    )
    assert generated.returncode == 0, generated.stderr
    checked = _run(str(BIN / "tsc"), "-p", "tsconfig.json")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    return HERE / "build" / "src" / "flow.js"


@pytest.fixture(scope="module")
def service(module_launch: Launch) -> Service:
    return module_launch(JWT_SECRET=SECRET, SCRIPTED_DELAY_MS="0", EXAMPLE_TOOLS_ENABLED="true")


def _token(user: str) -> str:
    now = int(time.time())
    claims = {"sub": user, "roles": ["user"], "iat": now, "exp": now + 600}
    return jwt.encode(claims, SECRET, algorithm="HS256")


def test_tsc_refuses_unknown_event_names_and_fields(compiled: Path) -> None:
    checked = _run(str(BIN / "tsc"), "-p", "tsconfig.wrong.json")

    assert checked.returncode != 0
    errors = checked.stdout
    assert "src/wrong.ts(10," in errors and "TS2678" in errors, errors  # `txt_delta`
    assert "src/wrong.ts(13," in errors and "TS2339" in errors, errors  # run_end.delta


def test_the_typed_client_reads_runs_decides_an_approval_and_lists(
    compiled: Path, service: Service
) -> None:
    done = _run("node", str(compiled), service.base_url, _token("tess"))

    assert done.returncode == 0, done.stderr + service.logs()
    summary: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    first, second, resumed = summary["first"], summary["second"], summary["resumed"]
    assert first["events"][0] == "run_start" and first["events"][-1] == "run_end"
    assert {"tool_start", "tool_end", "text_delta", "message_end"} <= set(first["events"])
    assert first["tools"] == ["add_node:success", "add_node:success", "connect:success"]
    assert first["status"] == "completed" and "designed" in first["text"]
    assert "confirm_required" in second["events"]
    assert second["tools"] == ["delete_node:waitingConfirmation"]
    assert second["status"] == "requires_action" and second["approvalId"]
    assert summary["decided"] == "approved"
    assert resumed["status"] == "completed"
    assert summary["pending"] == 0
    assert summary["listed"] == ["From TypeScript"]
