"""FastAPI still refuses a pydantic.v1 model once its check waits for pydantic.v1 to be
imported (`app.api.pydantic_v1_check`): the check is skipped only while no v1 model can
exist."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROBE = """
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


def test_a_pydantic_v1_model_is_still_refused_and_plain_routes_do_not_import_it(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={"PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == (
        "['route: PydanticV1NotSupportedError', 'encoder: PydanticV1NotSupportedError']"
    )
