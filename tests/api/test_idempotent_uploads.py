"""`Idempotency-Key` on `POST /api/files`: the same file sent again with the same key (a
dropped connection, a 503 from a COMMIT that landed) answers the first upload's file, and
no second file or copy of its bytes is kept."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select

from app.settings import Settings
from app.store.repos.files import FileRepo
from app.store.tables.files import FileRow
from tests.api.test_idempotency_keys import first_commit_answer_lost
from tests.fakes.db import ApiClient, MakeApi
from tests.files import samples

URL = "/api/files"


async def upload(api: ApiClient, name: str, data: bytes, key: str | None):  # type: ignore[no-untyped-def]
    headers = {} if key is None else {"Idempotency-Key": key}
    return await api.post(URL, files={"file": (name, data, "text/csv")}, headers=headers)


async def files_kept(api: ApiClient) -> int:
    async with api.services.db.sessions() as session:
        return int(await session.scalar(select(func.count()).select_from(FileRow)) or 0)


def blobs(settings: Settings) -> list[Path]:
    root = settings.files_dir
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


async def test_the_same_file_sent_again_with_the_key_is_the_same_file(
    api: ApiClient, app_settings: Settings
) -> None:
    first = await upload(api, "a.csv", samples.CSV_QUOTED, "u-1")
    again = await upload(api, "a.csv", samples.CSV_QUOTED, "u-1")

    assert first.status_code == again.status_code == 201, again.text
    assert again.json() == first.json()
    assert await files_kept(api) == 1
    assert len(blobs(app_settings)) == 1
    fetched = await api.get(f"{URL}/{first.json()['id']}")
    assert {k: v for k, v in fetched.json().items() if k != "created_at"} == {
        k: v for k, v in first.json().items() if k != "created_at"
    }
    # Without the key the same bytes are another file, as before.
    plain = await upload(api, "a.csv", samples.CSV_QUOTED, None)
    assert plain.json()["id"] != first.json()["id"]


async def test_another_file_under_the_key_is_refused_and_kept_nowhere(
    api: ApiClient, app_settings: Settings
) -> None:
    await upload(api, "a.csv", samples.CSV_QUOTED, "u-1")

    other_bytes = await upload(api, "a.csv", b"x,y\n3,4\n", "u-1")
    other_name = await upload(api, "b.csv", samples.CSV_QUOTED, "u-1")

    for refused in (other_bytes, other_name):
        assert refused.status_code == 422, refused.text
        assert refused.json()["error"]["code"] == "idempotency_key_reused"
    assert await files_kept(api) == 1
    assert len(blobs(app_settings)) == 1


async def test_a_malformed_key_is_refused_before_anything_is_stored(
    api: ApiClient, app_settings: Settings
) -> None:
    answer = await upload(api, "a.csv", samples.CSV_QUOTED, "x" * 256)

    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["param"] == "Idempotency-Key"
    assert await files_kept(api) == 0
    assert blobs(app_settings) == []


async def test_a_retry_after_a_lost_commit_answer_keeps_one_file(
    api: ApiClient, app_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    with first_commit_answer_lost(monkeypatch, FileRepo, "create"):
        lost = await upload(api, "a.csv", samples.CSV_QUOTED, "u-1")
        retry = await upload(api, "a.csv", samples.CSV_QUOTED, "u-1")

    assert lost.status_code == 503, lost.text
    assert retry.status_code == 201, retry.text
    assert await files_kept(api) == 1
    assert len(blobs(app_settings)) == 1
    content = await api.get(f"{URL}/{retry.json()['id']}/content")
    assert content.content == samples.CSV_QUOTED


async def test_a_file_whose_commit_answer_was_lost_keeps_its_bytes(
    api: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Also without a key: the upload is answered 503, but its file was recorded and is
    # listed to its owner; its bytes must still be there (they were deleted).
    with first_commit_answer_lost(monkeypatch, FileRepo, "create"):
        lost = await upload(api, "a.csv", samples.CSV_QUOTED, None)

    assert lost.status_code == 503, lost.text
    async with api.services.db.sessions() as session:
        file_id = await session.scalar(select(FileRow.id))
    content = await api.get(f"{URL}/{file_id}/content")
    assert content.status_code == 200
    assert content.content == samples.CSV_QUOTED


async def test_a_repeat_at_the_quota_answers_the_kept_file(
    make_api: MakeApi, app_settings: Settings
) -> None:
    # The first upload filled the quota: its repeat was 413 upload_quota_exceeded, counted
    # as a second copy before the key was read, though it stores nothing.
    size = len(samples.CSV_QUOTED)
    settings = app_settings.model_copy(update={"upload_quota_bytes": size + size // 2})
    async with make_api(settings) as api:
        first = await upload(api, "a.csv", samples.CSV_QUOTED, "u-1")
        again = await upload(api, "a.csv", samples.CSV_QUOTED, "u-1")
        other = await upload(api, "b.csv", samples.CSV_QUOTED, "u-2")
        kept = await files_kept(api)

    assert first.status_code == again.status_code == 201, again.text
    assert again.json() == first.json()
    assert other.status_code == 413, other.text  # another upload is still held to it
    assert kept == 1
    assert len(blobs(settings)) == 1


async def test_a_keyed_upload_sent_after_its_file_was_deleted_stores_it_anew(
    api: ApiClient, app_settings: Settings
) -> None:
    # The key's outcome outlived the file: the repeat answered the deleted file's id, whose
    # metadata and content were 404.
    first = await upload(api, "a.csv", samples.CSV_QUOTED, "u-1")
    deleted = await api.delete(f"{URL}/{first.json()['id']}")
    again = await upload(api, "a.csv", samples.CSV_QUOTED, "u-1")
    once_more = await upload(api, "a.csv", samples.CSV_QUOTED, "u-1")

    assert deleted.status_code == 204
    assert again.status_code == 201, again.text
    assert again.json()["id"] != first.json()["id"]
    assert once_more.json() == again.json()  # the key now keeps the new file
    content = await api.get(f"{URL}/{again.json()['id']}/content")
    assert content.content == samples.CSV_QUOTED
    assert await files_kept(api) == 1
    assert len(blobs(app_settings)) == 1
