"""A document whose text holds a lone surrogate or NUL (JSON can write either as a `\\u`
escape) is stored and read like any other: its extracted text is made valid as it enters,
as every other text is, instead of the upload failing with a 500 when the database took
the text (SQLite cannot encode a lone surrogate, Postgres refuses NUL)."""

from __future__ import annotations

import pytest

from app.settings import Settings
from tests.fakes.db import MakeApi

DOCUMENTS = {
    "json": b'{"name": "Ada\\ud800 Lovelace", "note": "a\\u0000b", "\\udc00key": 1}',
    "json-lines": b'{"Ada\\ud800": "x", "\\u0000": 1}\n{"note": "a"}\n',
}


@pytest.mark.parametrize("name", list(DOCUMENTS))
async def test_a_document_with_a_lone_surrogate_or_nul_is_uploaded_and_read(
    make_api: MakeApi, app_settings: Settings, name: str
) -> None:
    async with make_api(app_settings) as api:
        uploaded = await api.post(
            "/api/files", files={"file": (f"{name}.json", DOCUMENTS[name], "application/json")}
        )
        assert uploaded.status_code == 201, uploaded.text
        file_id = uploaded.json()["id"]
        listed = await api.get(f"/api/files/{file_id}")
        record = await api.services.files.get(app_settings.local_user_id, file_id)

    assert uploaded.json()["extraction"]["status"] == "ok"
    assert listed.status_code == 200, listed.text
    text = record[1].text if record[1] is not None else ""
    assert "Ada\ufffd" in text  # the JSON's text as read, or a JSON Lines record's keys
    assert "\x00" not in text and "\ud800" not in text
