"""The per-user upload quota: one user's stored files together stay under
`UPLOAD_QUOTA_BYTES`, so no one user fills the disk and the database everyone shares. A
refused upload leaves nothing; deleting files frees room; other users are not counted."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pydantic import SecretStr

from app.settings import Settings
from tests.auth.tokens import HS_SECRET, bearer, hs_token
from tests.fakes.db import ApiClient, MakeApi

OWNER = bearer(hs_token(sub="owner"))
OTHER = bearer(hs_token(sub="other"))
QUOTA = 2500
CSV = (b"a,b\n" * 250)[:1000]  # 1000 bytes: two fit under the quota, a third does not


def _quota(app_settings: Settings) -> Settings:
    update = {"upload_quota_bytes": QUOTA, "jwt_secret": SecretStr(HS_SECRET)}
    return app_settings.model_copy(update=update)


def _blobs(settings: Settings) -> list[Path]:
    root = settings.files_dir
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


async def _upload(api: ApiClient, name: str, headers: dict[str, str] = OWNER):  # type: ignore[no-untyped-def]
    return await api.post("/api/files", files={"file": (name, CSV, "text/csv")}, headers=headers)


async def test_an_upload_past_the_users_quota_is_413_and_leaves_nothing(
    make_api: MakeApi, app_settings: Settings
) -> None:
    settings = _quota(app_settings)
    async with make_api(settings) as api:
        kept = [await _upload(api, "one.csv"), await _upload(api, "two.csv")]
        refused = await _upload(api, "three.csv")

    assert [r.status_code for r in kept] == [201, 201]
    assert refused.status_code == 413, refused.text
    error = refused.json()["error"]
    assert error["code"] == "upload_quota_exceeded"
    assert (error["quota_bytes"], error["used_bytes"]) == (QUOTA, 2000)
    assert len(_blobs(settings)) == 2


async def test_deleting_a_file_frees_its_room(make_api: MakeApi, app_settings: Settings) -> None:
    async with make_api(_quota(app_settings)) as api:
        first = (await _upload(api, "one.csv")).json()
        await _upload(api, "two.csv")
        assert (await _upload(api, "three.csv")).status_code == 413
        deleted = await api.delete(f"/api/files/{first['id']}", headers=OWNER)
        again = await _upload(api, "three.csv")

    assert deleted.status_code == 204
    assert again.status_code == 201, again.text


async def test_another_users_files_do_not_count(make_api: MakeApi, app_settings: Settings) -> None:
    async with make_api(_quota(app_settings)) as api:
        await _upload(api, "one.csv")
        await _upload(api, "two.csv")
        others = [await _upload(api, f"{n}.csv", OTHER) for n in ("a", "b")]

    assert [r.status_code for r in others] == [201, 201]


async def test_uploads_side_by_side_cannot_pass_the_quota_together(
    make_api: MakeApi, app_settings: Settings
) -> None:
    settings = _quota(app_settings)
    async with make_api(settings) as api:
        answers = await asyncio.gather(*(_upload(api, f"{n}.csv") for n in range(6)))
        listed = [
            (await api.get(f"/api/files/{r.json()['id']}", headers=OWNER)).status_code
            for r in answers
            if r.status_code == 201
        ]

    codes = sorted(r.status_code for r in answers)
    assert codes == [201, 201, 413, 413, 413, 413], [r.text for r in answers]
    assert listed == [200, 200]
    assert len(_blobs(settings)) == 2
