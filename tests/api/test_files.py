"""`/api/files`: uploads streamed to storage, typed by their bytes, capped while read,
owner-scoped, and removed with the conversation that carried them."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from app.settings import Settings
from tests.auth.tokens import HS_SECRET, bearer, hs_token
from tests.fakes.db import ApiClient, MakeApi
from tests.files import samples

MB = 1024 * 1024


def _stored(settings: Settings) -> list[Path]:
    """Blobs in the files directory, finished or not."""
    root = settings.files_dir
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


async def _upload(api: ApiClient, name: str, data: bytes, mime: str = "application/octet-stream"):  # type: ignore[no-untyped-def]
    return await api.post("/api/files", files={"file": (name, data, mime)})


async def test_a_pdf_upload_answers_its_id_name_type_and_size(api: ApiClient) -> None:
    data = samples.pdf(["Risk one: supply chain", "Risk two: currency"])

    response = await _upload(api, "report.pdf", data, "application/pdf")

    assert response.status_code == 201, response.text
    body = response.json()
    assert body["id"].startswith("file_")
    assert (body["name"], body["media_type"], body["size"]) == (
        "report.pdf",
        "application/pdf",
        len(data),
    )
    assert body["extraction"]["status"] == "ok"
    assert body["extraction"]["truncated"] is False


async def test_metadata_and_content_come_back_to_the_owner(api: ApiClient) -> None:
    data = samples.png()
    created = (await _upload(api, "dot.png", data, "image/png")).json()

    meta = await api.get(f"/api/files/{created['id']}")
    content = await api.get(f"/api/files/{created['id']}/content")

    assert meta.status_code == 200
    assert meta.json()["media_type"] == "image/png"
    assert meta.json()["extraction"] is None
    assert content.status_code == 200
    assert content.content == data
    assert content.headers["content-type"] == "image/png"
    assert content.headers["x-content-type-options"] == "nosniff"


async def test_delete_removes_the_row_and_the_bytes(api: ApiClient, app_settings: Settings) -> None:
    created = (await _upload(api, "a.csv", samples.CSV_QUOTED)).json()
    assert _stored(app_settings)

    deleted = await api.delete(f"/api/files/{created['id']}")

    assert deleted.status_code == 204
    assert (await api.get(f"/api/files/{created['id']}")).status_code == 404
    assert _stored(app_settings) == []


async def test_the_type_comes_from_the_bytes_not_the_name_or_header(api: ApiClient) -> None:
    data = samples.pdf(["hello"])

    response = await _upload(api, "notes.txt", data, "text/plain")

    assert response.json()["media_type"] == "application/pdf"


async def test_every_supported_kind_is_recognised(api: ApiClient) -> None:
    cases = {
        "application/pdf": samples.pdf(["one", "two"]),
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": samples.xlsx(
            {"Q1": [["a", "b"], [1, 2]], "Q2": [["c"], [3]]}
        ),
        "text/csv": samples.CSV_QUOTED,
        "application/json": b'{"risks": ["fx", "supply"]}',
        "image/png": samples.png(),
        "image/jpeg": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
        + b"\x00" * 64
        + b"\xff\xd9",
    }
    for expected, data in cases.items():
        response = await _upload(api, "upload.bin", data)
        assert response.status_code == 201, (expected, response.text)
        assert response.json()["media_type"] == expected


async def test_every_kind_downloads_as_a_type_the_openapi_document_names(api: ApiClient) -> None:
    # A generated client picks its decoder from the documented types: the document named
    # only application/octet-stream, which no download answers with.
    operation = api.app.openapi()["paths"]["/api/files/{file_id}/content"]["get"]
    documented = set(operation["responses"]["200"]["content"])
    samples_by_kind = [samples.pdf(["one"]), samples.CSV_QUOTED, b'{"a": 1}', samples.png()]
    for data in samples_by_kind:
        file_id = (await _upload(api, "upload.bin", data)).json()["id"]
        content = await api.get(f"/api/files/{file_id}/content")
        assert content.status_code == 200
        assert content.headers["content-type"].split(";")[0] in documented


async def test_a_windows_csv_and_json_lines_are_accepted_as_what_they_are(
    api: ApiClient,
) -> None:
    russian = "имя;сумма\nИван;10\nПётр;20\n".encode("cp1251")  # noqa: RUF001
    lines = b'{"id": 1}\n{"id": 2}\n'

    csv_file = await _upload(api, "отчёт.csv", russian, "text/csv")
    json_file = await _upload(api, "events.ndjson", lines, "application/x-ndjson")

    assert csv_file.status_code == 201, csv_file.text
    assert csv_file.json()["media_type"] == "text/csv"
    assert json_file.status_code == 201, json_file.text
    assert json_file.json()["media_type"] == "application/json"


async def test_a_renamed_executable_is_415_naming_the_supported_types(
    api: ApiClient, app_settings: Settings
) -> None:
    response = await _upload(api, "report.pdf", samples.exe(), "application/pdf")

    assert response.status_code == 415
    error = response.json()["error"]
    assert error["code"] == "unsupported_file_type"
    assert "PDF, XLSX, CSV, JSON, PNG, JPEG" in error["message"]
    assert _stored(app_settings) == []


async def test_plain_text_and_other_archives_are_415(api: ApiClient) -> None:
    zipped = samples.zip_bomb_xlsx(1000).replace(b"xl/workbook.xml", b"xx/workbook.xml")
    for data in (b"just words\nmore words\n", zipped, b"{not json"):
        response = await _upload(api, "x.csv", data)
        assert response.status_code == 415, response.text


async def test_ten_megabytes_and_one_byte_is_413_with_the_limit(
    api: ApiClient, app_settings: Settings
) -> None:
    line = b"alpha,beta,gamma\n"
    data = (line * (10 * MB // len(line) + 1))[: 10 * MB + 1]

    response = await _upload(api, "big.csv", data, "text/csv")

    assert response.status_code == 413, response.text
    error = response.json()["error"]
    assert error["code"] == "file_too_large"
    assert "10 MB" in error["message"]
    assert error["limit_bytes"] == 10 * MB
    assert _stored(app_settings) == []


async def test_a_file_of_exactly_the_limit_is_accepted(
    make_api: MakeApi, app_settings: Settings
) -> None:
    settings = app_settings.model_copy(update={"upload_max_bytes": 1000})
    data = (b"a,b\n" * 300)[:1000]
    async with make_api(settings) as api:
        exact = await _upload(api, "limit.csv", data)
        over = await _upload(api, "over.csv", data + b"1")

    assert exact.status_code == 201, exact.text
    assert over.status_code == 413


async def test_a_zip_bomb_dressed_as_xlsx_is_refused(
    api: ApiClient, app_settings: Settings
) -> None:
    response = await _upload(api, "q1.xlsx", samples.zip_bomb_xlsx())

    assert response.status_code == 422, response.text
    assert response.json()["error"]["code"] == "file_rejected"
    assert "bomb" in response.json()["error"]["message"]
    assert _stored(app_settings) == []


async def test_a_workbook_with_broken_xml_is_422_and_leaves_nothing(
    api: ApiClient, app_settings: Settings
) -> None:
    response = await _upload(api, "book.xlsx", samples.xlsx_broken_sheet())

    assert response.status_code == 422, response.text
    assert response.json()["error"] == {
        "code": "file_rejected",
        "message": "The spreadsheet could not be read.",
    }
    assert _stored(app_settings) == []


async def test_a_pdf_that_never_ends_is_refused_quickly(api: ApiClient) -> None:
    started = time.monotonic()

    response = await _upload(api, "endless.pdf", samples.endless_pdf())

    assert response.status_code == 422, response.text
    assert time.monotonic() - started < 10


def _multipart(boundary: str, head: bytes) -> tuple[bytes, bytes]:
    opening = (
        f"--{boundary}\r\n"
        'Content-Disposition: form-data; name="file"; filename="slow.csv"\r\n'
        "Content-Type: text/csv\r\n\r\n"
    ).encode() + head
    return opening, f"\r\n--{boundary}--\r\n".encode()


async def test_a_slow_upload_is_408_and_others_are_served_meanwhile(
    make_api: MakeApi, app_settings: Settings
) -> None:
    settings = app_settings.model_copy(update={"upload_timeout_seconds": 0.5})
    opening, closing = _multipart("b0undary", b"a,b\n")

    async def trickle() -> AsyncIterator[bytes]:
        yield opening
        for _ in range(20):
            await asyncio.sleep(0.1)
            yield b"1,2\n"
        yield closing

    async with make_api(settings) as api:
        upload = asyncio.create_task(
            api.post(
                "/api/files",
                content=trickle(),
                headers={"content-type": "multipart/form-data; boundary=b0undary"},
            )
        )
        await asyncio.sleep(0.15)
        started = time.monotonic()
        health = await api.get("/healthz")
        served_in = time.monotonic() - started
        response = await upload

    assert health.status_code == 200
    assert served_in < 0.5
    assert response.status_code == 408, response.text
    assert response.json()["error"]["code"] == "upload_timeout"
    assert _stored(settings) == []


async def test_a_name_with_quotes_and_a_line_break_keeps_them(api: ApiClient) -> None:
    # Browsers, fetch's FormData and httpx send `"`, CR and LF of a file name as %22, %0D
    # and %0A (the HTML standard's form encoding); any other % is the name's own.
    name = 'Budget "draft"\r\nQ3 100%25.csv'
    created = (await _upload(api, name, samples.CSV_QUOTED, "text/csv")).json()

    content = await api.get(f"/api/files/{created['id']}/content")

    assert created["name"] == name
    assert content.headers["content-disposition"] == (
        "attachment; filename*=UTF-8''Budget%20%22draft%22%0D%0AQ3%20100%2525.csv"
    )


async def test_a_body_that_is_not_multipart_is_400(api: ApiClient) -> None:
    response = await api.post("/api/files", json={"file": "x"})

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_upload"


async def test_two_files_in_one_form_are_400_and_neither_is_kept(
    api: ApiClient, app_settings: Settings
) -> None:
    response = await api.post(
        "/api/files",
        files=[("file", ("a.csv", samples.CSV_QUOTED)), ("file", ("b.png", samples.png()))],
    )

    assert response.status_code == 400, response.text
    assert response.json()["error"] == {
        "code": "invalid_upload",
        "message": "Send one file per request: the form has a second part named `file`.",
    }
    assert _stored(app_settings) == []


async def test_a_file_in_a_part_with_another_name_is_400_naming_it(api: ApiClient) -> None:
    response = await api.post(
        "/api/files", data={"purpose": "assistants"}, files={"upload": ("a.csv", b"a,b\n1,2\n")}
    )

    assert response.status_code == 400, response.text
    assert response.json()["error"]["message"] == (
        "The file is in a part named 'upload'; send it in a part named `file`."
    )


@pytest.mark.parametrize(
    ("data", "status", "message"),
    [
        (samples.png(64, 64)[:60], 422, "The PNG image is truncated or damaged."),
        (b"", 422, "The file is empty."),
        (
            b"GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00;",
            415,
            "The file is a GIF image; images are accepted as PNG or JPEG. Unsupported file "
            "type; supported: PDF, XLSX, CSV, JSON, PNG, JPEG.",
        ),
    ],
)
async def test_broken_empty_and_unsupported_images_say_what_they_are(
    api: ApiClient, data: bytes, status: int, message: str
) -> None:
    response = await _upload(api, "picture.png", data, "image/png")

    assert response.status_code == status, response.text
    assert response.json()["error"]["message"] == message


OWNER = bearer(hs_token(sub="owner"))
OTHER = bearer(hs_token(sub="other"))


async def _owners_file(api: ApiClient) -> str:
    created = await api.post(
        "/api/files", files={"file": ("a.csv", samples.CSV_QUOTED)}, headers=OWNER
    )
    file_id: str = created.json()["id"]
    return file_id


async def test_another_users_file_is_404_on_every_route(
    make_api: MakeApi, app_settings: Settings
) -> None:
    settings = app_settings.model_copy(update={"jwt_secret": SecretStr(HS_SECRET)})
    owner, other = OWNER, OTHER
    async with make_api(settings) as api:
        file_id = await _owners_file(api)
        answers = [
            await api.get(f"/api/files/{file_id}", headers=other),
            await api.get(f"/api/files/{file_id}/content", headers=other),
            await api.delete(f"/api/files/{file_id}", headers=other),
        ]
        still = await api.get(f"/api/files/{file_id}", headers=owner)

    assert [a.status_code for a in answers] == [404, 404, 404]
    assert still.status_code == 200


async def test_purging_a_conversation_removes_its_files(
    api: ApiClient, app_settings: Settings
) -> None:
    kept = (await _upload(api, "kept.csv", samples.CSV_QUOTED)).json()
    used = (await _upload(api, "used.csv", samples.CSV_QUOTED)).json()
    conversation = (await api.post("/api/conversations", json={})).json()
    content = [
        {"type": "text", "data": {"text": "summarise"}},
        {"type": "file", "data": {"id": used["id"], "name": "used.csv"}},
    ]
    started = await api.post(
        f"/api/conversations/{conversation['id']}/messages", json={"content": content}
    )
    assert started.status_code == 202, started.text
    await api.get(started.json()["events_url"])
    assert (await api.get(f"/api/files/{used['id']}")).json()["conversation_id"] == conversation[
        "id"
    ]

    purged = await api.delete(f"/api/conversations/{conversation['id']}", params={"purge": "true"})

    assert purged.status_code == 204
    assert (await api.get(f"/api/files/{used['id']}")).status_code == 404
    assert (await api.get(f"/api/files/{kept['id']}")).status_code == 200
    assert [p.name for p in _stored(app_settings)] == [kept["id"]]


async def _say_with(api: ApiClient, conversation_id: str, file_id: str) -> None:
    content = [
        {"type": "text", "data": {"text": "summarise"}},
        {"type": "file", "data": {"id": file_id, "name": "shared.csv"}},
    ]
    started = await api.post(
        f"/api/conversations/{conversation_id}/messages", json={"content": content}
    )
    assert started.status_code == 202, started.text
    await api.get(started.json()["events_url"])


async def test_purging_one_conversation_keeps_a_file_another_still_carries(
    api: ApiClient, app_settings: Settings
) -> None:
    shared = (await _upload(api, "shared.csv", samples.CSV_QUOTED)).json()["id"]
    first = (await api.post("/api/conversations", json={})).json()["id"]
    second = (await api.post("/api/conversations", json={})).json()["id"]
    await _say_with(api, first, shared)
    await _say_with(api, second, shared)

    await api.delete(f"/api/conversations/{first}", params={"purge": "true"})

    moved = await api.get(f"/api/files/{shared}")
    assert moved.status_code == 200, "the second conversation's file went with the first"
    assert moved.json()["conversation_id"] == second
    assert [p.name for p in _stored(app_settings)] == [shared]
    await api.delete(f"/api/conversations/{second}", params={"purge": "true"})
    assert (await api.get(f"/api/files/{shared}")).status_code == 404
    assert _stored(app_settings) == []


async def test_a_file_part_naming_someone_elses_file_is_404(
    make_api: MakeApi, app_settings: Settings
) -> None:
    settings = app_settings.model_copy(update={"jwt_secret": SecretStr(HS_SECRET)})
    async with make_api(settings) as api:
        content = [{"type": "file", "id": await _owners_file(api), "name": "a.csv"}]
        response = await api.post(
            "/api/chat", json={"messages": [{"role": "user", "content": content}]}, headers=OTHER
        )

    assert response.status_code == 404, response.text


async def test_reading_a_large_document_does_not_stall_other_requests(api: ApiClient) -> None:
    pages = [f"Line of report text number {i}. " * 20 for i in range(500)]
    upload = asyncio.create_task(_upload(api, "long.pdf", samples.pdf(pages)))
    slowest = 0.0
    while not upload.done():
        started = time.monotonic()
        assert (await api.get("/healthz")).status_code == 200
        slowest = max(slowest, time.monotonic() - started)
        await asyncio.sleep(0.02)

    response = await upload
    assert response.status_code == 201, response.text
    assert response.json()["extraction"]["truncated"] is True
    assert slowest < 0.5
