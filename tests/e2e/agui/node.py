"""The Node side of the AG-UI checks (`tests.e2e.npm_clients` does the work)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e import npm_clients

HERE = Path(__file__).parent
CLIENT = HERE / "node_modules" / "@ag-ui" / "client" / "package.json"


def prepare() -> None:
    npm_clients.prepare(HERE, [CLIENT], "@ag-ui/client")


def client_version() -> str:
    version: str = json.loads(CLIENT.read_text())["version"]
    return version


def run_node(script: str, *args: str, timeout: float = 120, context: str = "") -> Any:
    return npm_clients.run_node(HERE, script, *args, timeout=timeout, context=context)
