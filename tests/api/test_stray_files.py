"""Bytes of an upload whose file was never recorded (the process died, or the request
was cancelled, between writing them and committing the file's row) are removed once they
are older than FILES_SWEEP_GRACE_SECONDS: at the next start, and then periodically. Bytes
a file names, and bytes young enough that their file may still be being recorded, stay."""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.files import sweep
from app.files.service import StagedUpload
from app.settings import Settings
from tests.fakes.db import ApiClient, MakeApi
from tests.files import samples


async def _chunks(data: bytes) -> AsyncIterator[bytes]:
    yield data


def _blob(settings: Settings, key: str) -> Path:
    return settings.files_dir / key[-2:] / key


def _age(path: Path, settings: Settings) -> None:
    """Last written longer ago than the grace."""
    old = time.time() - settings.files_sweep_grace_seconds - 60
    os.utime(path, (old, old))


async def _unrecorded(api: ApiClient, name: str) -> StagedUpload:
    """An upload's bytes written, its row never committed (a crash between the two)."""
    return await api.services.files.stage("dev", name, _chunks(samples.CSV_QUOTED))


async def test_at_start_up_old_bytes_no_file_names_are_removed_and_the_rest_kept(
    make_api: MakeApi, app_settings: Settings
) -> None:
    async with make_api(app_settings) as api:
        await api.services.stray_files.first_pass.wait()
        kept = await api.post("/api/files", files={"file": ("kept.csv", samples.CSV_QUOTED)})
        stray = await _unrecorded(api, "stray.csv")
        fresh = await _unrecorded(api, "fresh.csv")
    unfinished = _blob(app_settings, stray.file_id).with_name("file_0123.part")
    unfinished.write_bytes(b"half an upl")
    for path in (_blob(app_settings, kept.json()["id"]), _blob(app_settings, stray.file_id)):
        _age(path, app_settings)
    _age(unfinished, app_settings)

    async with make_api(app_settings) as restarted:
        await restarted.services.stray_files.first_pass.wait()
        content = await restarted.get(f"/api/files/{kept.json()['id']}/content")

    assert not _blob(app_settings, stray.file_id).exists()
    assert not unfinished.exists()
    assert _blob(app_settings, fresh.file_id).exists()  # its row may still be committing
    assert content.status_code == 200
    assert content.content == samples.CSV_QUOTED


async def test_a_large_store_is_walked_a_slice_at_a_time(
    api: ApiClient, app_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sweep, "BATCH", 2)
    monkeypatch.setattr(sweep, "PASS_KEYS", 2)
    await api.services.stray_files.first_pass.wait()
    files = [
        (await api.post("/api/files", files={"file": (f"{n}.csv", samples.CSV_QUOTED)})).json()
        for n in range(5)
    ]
    strays = [await _unrecorded(api, f"stray{n}.csv") for n in range(2)]
    for key in [f["id"] for f in files] + [s.file_id for s in strays]:
        _age(_blob(app_settings, key), app_settings)

    removed = [await api.services.stray_files.sweep() for _ in range(4)]

    assert sum(removed) == 2
    assert not any(_blob(app_settings, s.file_id).exists() for s in strays)
    for file in files:
        assert (await api.get(f"/api/files/{file['id']}/content")).content == samples.CSV_QUOTED
