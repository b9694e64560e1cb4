"""Tests keep what they store in temporary storage, never in the working directory."""

from __future__ import annotations

from pathlib import Path

from pydantic import SecretStr

from tests.auth.tokens import HS_SECRET, bearer, hs_token, sqlite_settings
from tests.fakes.db import MakeApi


async def test_an_app_built_from_plain_test_settings_stores_files_in_the_tests_directory(
    make_api: MakeApi, tmp_path: Path
) -> None:
    # tests/api/test_limits.py built its settings without `files_dir`: each run left the
    # files it sent in ./chat-bff-files, in the checkout.
    settings = sqlite_settings(tmp_path, jwt_secret=SecretStr(HS_SECRET))
    async with make_api(settings) as api:
        answer = await api.post(
            "/api/files",
            files={"file": ("t.csv", b"a,b\n1,2\n", "text/csv")},
            headers=bearer(hs_token(sub="alice")),
        )

    assert answer.status_code == 201, answer.text
    stored = [p for p in settings.files_dir.rglob("*") if p.is_file()]
    assert [p.name for p in stored] == [answer.json()["id"]]
    assert settings.files_dir.resolve().is_relative_to(tmp_path.resolve())
