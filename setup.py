"""Which packages the wheel holds; everything else about the project is in pyproject.toml.

The Alembic scripts live at the top of the repository (`migrations/`, beside `alembic.ini`
for authoring), but an installed service needs them too: the wheel carries that folder,
and each folder below it, as `app.migrations`, where `app/store/migrate.py` looks first.
pyproject.toml alone cannot map a folder outside `app/` into it while also discovering
the packages under `app/`, hence this file.
"""

from pathlib import Path

from setuptools import find_packages, setup

ROOT = Path(__file__).resolve().parent
MIGRATIONS = ROOT / "migrations"

folders = [MIGRATIONS, *(d for d in sorted(MIGRATIONS.rglob("*")) if d.is_dir())]
migration_packages = {
    ".".join(("app", *folder.relative_to(ROOT).parts)): folder.relative_to(ROOT).as_posix()
    for folder in folders
    if "__pycache__" not in folder.parts
}

setup(
    packages=[*find_packages(include=["app", "app.*"]), *migration_packages],
    package_dir=migration_packages,
)
