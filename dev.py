#!/usr/bin/env python3
"""Developer entry point; needs nothing but Python 3.11+.

    python3 dev.py serve   # venv + deps, then uvicorn on 127.0.0.1:8000 (SQLite, scripted model)
    python3 dev.py test    # venv + deps, then the whole test suite (pytest args pass through)
    python3 dev.py check   # ruff, mypy --strict, OpenAPI drift
    python3 dev.py openapi # regenerate openapi/openapi.json from the app
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"
STAMP = VENV / ".chat-bff-deps"


def ensure_env() -> None:
    if sys.version_info < (3, 11):
        sys.exit("chat-bff needs Python 3.11 or newer")
    if not PY.exists():
        print("creating .venv ...", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if not STAMP.exists() or STAMP.read_text() != digest:
        print("installing dependencies ...", flush=True)
        pip = [str(PY), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
        subprocess.run([*pip, "--upgrade", "pip"], check=True)
        subprocess.run([*pip, "-e", f"{ROOT}[dev]"], check=True)
        STAMP.write_text(digest)


def run(*args: str) -> int:
    return subprocess.call(list(args), cwd=ROOT)


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "serve"
    rest = argv[1:]
    ensure_env()
    if command == "serve":
        host = os.environ.get("HOST", "127.0.0.1")
        port = os.environ.get("PORT", "8000")
        return run(str(PY), "-m", "uvicorn", "app.main:app", "--host", host, "--port", port, *rest)
    if command == "test":
        return run(str(PY), "-m", "pytest", *rest)
    if command == "check":
        for step in (
            [str(PY), "-m", "ruff", "check", "app", "tests", "bench", "migrations", "dev.py"],
            [str(PY), "-m", "ruff", "format", "--check", "app", "tests", "bench", "migrations"],
            [str(PY), "-m", "mypy"],
            [str(PY), "-m", "app.openapi_dump", "--check"],
        ):
            print("$", " ".join(step[2:]), flush=True)
            if run(*step) != 0:
                return 1
        return 0
    if command == "openapi":
        return run(str(PY), "-m", "app.openapi_dump")
    sys.exit(f"unknown command {command!r}; see the docstring of dev.py")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
