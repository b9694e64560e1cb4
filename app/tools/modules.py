"""Tool modules: how deployers (and the examples) add tools without editing chat-bff.

A tool module is any importable module with `register(registry)`. The container decides
which ones a deployment loads (`TOOL_MODULES`, plus the example graph where it is on) and
passes their names here. A tool *package* that keeps tables of its own ships their Alembic
revisions in a `migrations/` package beside its `__init__.py` (the layout of
`app/examples/graph/`); `migration_dirs` finds them without importing the tool package.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterable
from pathlib import Path

from app.tools.registry import ToolRegistry


def load_tool_modules(registry: ToolRegistry, module_names: Iterable[str]) -> None:
    """Import each module and let it register its tools, in order."""
    for name in module_names:
        module = importlib.import_module(name)
        register = getattr(module, "register", None)
        if not callable(register):
            raise ValueError(f"TOOL_MODULES: {name!r} has no register(registry)")
        register(registry)


def migration_dirs(module_names: Iterable[str]) -> tuple[Path, ...]:
    """The revision directories of those tool modules that are packages with tables."""
    found: list[Path] = []
    for name in module_names:
        spec = importlib.util.find_spec(name)
        if spec is None:
            raise ModuleNotFoundError(f"TOOL_MODULES: no module named {name!r}", name=name)
        for location in spec.submodule_search_locations or ():
            candidate = Path(location) / "migrations"
            if candidate.is_dir():
                found.append(candidate)
    return tuple(found)
