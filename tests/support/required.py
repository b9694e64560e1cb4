"""What a test needs from the machine: optional on a laptop, required in CI.

A developer without Postgres, Redis, nginx, node or Chromium still runs the rest of the
suite (those tests are skipped, saying why); CI installs and starts all of them (`.ci/run`
sets `CI`), so there a missing one fails the test instead of hiding it.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def unavailable(reason: str) -> NoReturn:
    """Skip the test for `reason`, or fail it when running under CI."""
    if os.environ.get("CI"):
        pytest.fail(f"required in CI: {reason}")
    pytest.skip(reason)
