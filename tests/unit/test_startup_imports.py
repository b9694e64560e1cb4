"""What a started service has imported when nothing asks for more: the MCP SDK (servers
configured), numpy (the router's embedding fallback), openpyxl and pypdf (a workbook or a
PDF to read) are imported on first use, asyncpg only where the database is Postgres
(about 2 MB of idle memory on SQLite, `app/store/database.py`), and PyJWT with cryptography
(9 MB) only where bearer JWTs are verified or on the first stream or minted token. Together
they were about a third of the start-up time and 50 MB of idle memory, for features a
deployment may never touch. Alembic and Mako (about 19 MB once an upgrade has run) never
enter the worker: a database behind the schema is upgraded by a child process
(`app.store.migrate.upgrade_on_start`), and the probe's database starts empty. The
router's Russian stemmer (snowballstemmer imports all 39 languages, 2.9 MB) is made on the
first Russian word: at start-up only where a tool's keywords hold one (the example tools'
do; the bench starts without them). puremagic's table of signatures (1.2 MB) is read on the
first upload, and pydantic.v1 (1.6 MB), which FastAPI imported to ask of every route's
models whether they are v1 models, is not imported: nothing can be one until it is.
SQLAlchemy's Postgres dialect (2.4 MB) is imported only where the database is Postgres."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = """
import json, sys
from fastapi.testclient import TestClient
from app.main import create_app
with TestClient(create_app()) as client:
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code == 200
lazy = (
    "mcp", "mcp_types", "numpy", "openpyxl", "pypdf", "jsonschema", "asyncpg",
    "jwt", "cryptography", "alembic", "mako", "snowballstemmer", "puremagic", "pydantic.v1",
    "sqlalchemy.dialects.postgresql",
)
print(json.dumps(sorted(m for m in lazy if m in sys.modules)))
"""

V1_PROBE = """
import sys, warnings
import fastapi
from fastapi.encoders import jsonable_encoder
from app.api.pydantic_v1_check import ask_only_once_imported
ask_only_once_imported()
ask_only_once_imported()
router = fastapi.APIRouter()

@router.post("/plain")
def plain(limit: int = 3) -> dict[str, int]:
    return {"limit": limit}

assert "pydantic.v1" not in sys.modules, "a plain route imported pydantic.v1"
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from pydantic import v1

class Old(v1.BaseModel):
    name: str

refused = []
try:
    @router.post("/old")
    def old(body: Old) -> None: ...
except fastapi.exceptions.FastAPIError as exc:
    refused.append("route: " + type(exc).__name__)
try:
    jsonable_encoder(Old(name="x"))
except fastapi.exceptions.FastAPIError as exc:
    refused.append("encoder: " + type(exc).__name__)
print(refused)
"""


@pytest.mark.parametrize(
    ("examples", "needed"), [("false", []), ("true", ["snowballstemmer"])], ids=["bare", "examples"]
)
def test_a_started_service_has_not_imported_what_only_some_requests_need(
    tmp_path: Path, examples: str, needed: list[str]
) -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MCP_", "TOOL_ROUTER", "DATABASE_", "REDIS_", "EXAMPLE_TOOLS"))
    }
    env["EXAMPLE_TOOLS_ENABLED"] = examples
    env["DATABASE_URL"] = f"sqlite+aiosqlite:///{tmp_path / 'probe.db'}"
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])  # run away from any .env
    assert json.loads(_last_line(PROBE, env, tmp_path)) == needed


def test_a_pydantic_v1_model_is_still_refused_though_plain_routes_do_not_import_it(
    tmp_path: Path,
) -> None:
    """FastAPI's v1 check waits for pydantic.v1 to be imported (`app.api.pydantic_v1_check`):
    skipped only while no v1 model can exist, it still refuses one afterwards."""
    env = {"PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    assert _last_line(V1_PROBE, env, tmp_path) == (
        "['route: PydanticV1NotSupportedError', 'encoder: PydanticV1NotSupportedError']"
    )


def _last_line(code: str, env: dict[str, str], cwd: Path) -> str:
    """The last line a fresh interpreter running `code` printed (it must exit 0)."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]
