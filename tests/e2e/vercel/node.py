"""The Node side of the Vercel checks (`tests.e2e.npm_clients` does the work)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e import npm_clients

HERE = Path(__file__).parent
MAJORS = (5, 6, 7)


def prepare() -> None:
    installed = [HERE / "node_modules" / f"ai{m}" / "package.json" for m in MAJORS]
    npm_clients.prepare(HERE, installed, "the Vercel AI SDK clients")


def run_node(script: str, *args: str, timeout: float = 120, context: str = "") -> Any:
    return npm_clients.run_node(HERE, script, *args, timeout=timeout, context=context)
