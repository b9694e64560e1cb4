"""FastAPI's pydantic.v1 check, asked only once pydantic.v1 is imported.

FastAPI asks of every route parameter and response model it builds, and of an unusual
object it encodes, whether it is a pydantic.v1 model (to refuse it), and imports
`pydantic.v1` to ask: about 1.6 MB of a started worker's memory for a package nothing here
uses. A class or object can be a pydantic.v1 model only once `pydantic.v1` has been
imported, so until then the answer is no without importing it; afterwards FastAPI's own
check answers, and refuses a v1 model as it always did.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import fastapi._compat.shared as _shared
import fastapi.encoders as _encoders

_V1 = "pydantic.v1"


def _once_imported(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    def asked(obj: Any) -> bool:
        return _V1 in sys.modules and check(obj)

    asked.__wrapped__ = check  # type: ignore[attr-defined]
    return asked


def ask_only_once_imported() -> None:
    """Swap FastAPI's checks for ones that first look whether pydantic.v1 is imported
    (once; FastAPI's module names looked up where it calls them)."""
    for module, name in (
        (_shared, "is_pydantic_v1_model_class"),
        (_encoders, "is_pydantic_v1_model_instance"),
    ):
        check = getattr(module, name)
        if not hasattr(check, "__wrapped__"):
            setattr(module, name, _once_imported(check))
