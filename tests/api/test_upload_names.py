"""A file's name sent as `filename*` (RFC 6266 / RFC 5987 ext-value, what some clients
send for a name beyond ASCII) names the stored file, and wins over `filename`; one that
cannot be read leaves `filename` in charge. Raw multipart bodies over real HTTP on
loopback, on SQLite and Postgres."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from tests.fakes.db import ApiClient
from tests.support.loopback import served

BOUNDARY = "n4mes"
CSV = b"city,rate\nOslo,1\n"


@pytest.fixture
async def base(api: ApiClient) -> AsyncIterator[str]:
    async with served(api.app) as url:
        yield url


def _form(disposition: str) -> bytes:
    """One part, its Content-Disposition as given (ASCII, as such clients send it)."""
    return (
        (
            f"--{BOUNDARY}\r\nContent-Disposition: {disposition}\r\nContent-Type: text/csv\r\n\r\n"
        ).encode()
        + CSV
        + f"\r\n--{BOUNDARY}--\r\n".encode()
    )


async def _upload(base: str, disposition: str) -> tuple[int, dict[str, Any], str]:
    """Status and body of the upload, and the name the download is offered under."""
    headers = {"content-type": f"multipart/form-data; boundary={BOUNDARY}"}
    async with httpx.AsyncClient(base_url=base, timeout=10) as http:
        response = await http.post("/api/files", content=_form(disposition), headers=headers)
        body = response.json()
        if response.status_code != 201:
            return response.status_code, body, ""
        content = await http.get(f"/api/files/{body['id']}/content")
        assert content.content == CSV
    return response.status_code, body, content.headers["content-disposition"]


NAMED = {
    "UTF-8 alone": (
        "form-data; name=\"file\"; filename*=UTF-8''%E2%82%AC%20rates%20%C3%A9t%C3%A9.csv",
        "€ rates été.csv",
    ),
    "beside an ASCII stand-in": (
        'form-data; name="file"; filename="rates.csv"; '
        "filename*=utf-8''%D0%BA%D1%83%D1%80%D1%81%D1%8B.csv",
        "курсы.csv",
    ),
    "before the stand-in": (
        'form-data; name="file"; filename*=UTF-8\'en\'%E6%B1%87%E7%8E%87.csv; filename="x.csv"',
        "汇率.csv",
    ),
    "ISO-8859-1": (
        "form-data; name=\"file\"; filename*=ISO-8859-1''%A3%20rates.csv",
        "£ rates.csv",
    ),
    "quoted by a lax client": (
        'form-data; name="file"; filename*="UTF-8\'\'caf%C3%A9.csv"',
        "café.csv",
    ),
}


@pytest.mark.parametrize(("disposition", "name"), NAMED.values(), ids=NAMED.keys())
async def test_filename_star_names_the_file(base: str, disposition: str, name: str) -> None:
    status, body, offered = await _upload(base, disposition)

    assert status == 201, body
    assert body["name"] == name
    assert offered == f"attachment; filename*=UTF-8''{quote(name)}"


MALFORMED = {
    "a cut escape": "UTF-8''%E2%82.csv",
    "a stray percent": "UTF-8''100%.csv",
    "no charset marks": "%E2%82%AC.csv",
    "an unsupported charset": "koi8-r''%F0.csv",
    "bytes that are not UTF-8": "UTF-8''%FF%FE.csv",
    "empty": "UTF-8''",
}


@pytest.mark.parametrize("ext", MALFORMED.values(), ids=MALFORMED.keys())
async def test_an_unreadable_filename_star_leaves_filename_in_charge(base: str, ext: str) -> None:
    status, body, _ = await _upload(
        base, f'form-data; name="file"; filename*={ext}; filename="rates.csv"'
    )

    assert status == 201, body
    assert body["name"] == "rates.csv"


async def test_a_filename_star_in_a_part_with_another_name_is_400_naming_it(base: str) -> None:
    status, body, _ = await _upload(base, "form-data; name=\"upload\"; filename*=UTF-8''a.csv")

    assert status == 400
    assert body["error"]["message"] == (
        "The file is in a part named 'upload'; send it in a part named `file`."
    )
