"""Uploads against a real uvicorn process over real sockets: the refusal of an oversized
file reaches a client that is still sending, and a real upload is read back."""

from __future__ import annotations

import httpx
import pytest

from tests.e2e.conftest import Launch
from tests.files import samples

pytestmark = pytest.mark.e2e

MB = 1024 * 1024


@pytest.mark.parametrize("size", [10 * MB + 1, 40 * MB], ids=["10MB+1", "40MB"])
def test_an_oversized_upload_is_413_over_a_real_socket(launch: Launch, size: int) -> None:
    service = launch()
    line = b"alpha,beta,gamma\n"
    data = (line * (size // len(line) + 1))[:size]

    with httpx.Client(base_url=service.base_url, timeout=30) as client:
        response = client.post("/api/files", files={"file": ("big.csv", data, "text/csv")})
        after = client.get("/healthz")

    assert response.status_code == 413, response.text
    assert "10 MB" in response.json()["error"]["message"]
    assert after.status_code == 200
    assert service.db_rows()["files"] == []


def test_a_pdf_uploaded_over_a_real_socket_reads_back(launch: Launch) -> None:
    service = launch()
    data = samples.pdf(["Risk one", "Risk two"])

    with httpx.Client(base_url=service.base_url, timeout=30) as client:
        created = client.post("/api/files", files={"file": ("r.pdf", data)})
        content = client.get(f"/api/files/{created.json()['id']}/content")

    assert created.status_code == 201, created.text
    assert content.content == data
