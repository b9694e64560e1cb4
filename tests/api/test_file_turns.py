"""File parts in turns: the model receives the document's text (what the scripted
provider was sent is asserted), images reach vision models only, inline data URLs are
stored like uploads, and a document cut to fit the context is announced on the stream."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import openai
import pytest

from app.domain.messages import Message
from app.domain.parts import FilePart
from app.providers.scripted import Script, ScriptedProvider, ScriptedTurn
from app.settings import Settings
from app.store.repos.files import FileRepo
from tests.api.sse_frames import Frame, parse
from tests.api.test_openai_compat import sdk_for
from tests.fakes.db import ApiClient, MakeApi
from tests.files import samples
from tests.support.lost_database import lose_connection_in

REPORT = ["Risk one: supply chain delays", "Risk two: currency exposure (FX)"]
VISION = {
    "id": "scripted-vision",
    "provider": "scripted",
    "upstream_model": "scripted-demo",
    "context_window": 32000,
    "supports_vision": True,
}


def _provider(api: ApiClient) -> ScriptedProvider:
    provider = ScriptedProvider(
        Script(mode="rules", turns=[ScriptedTurn(text="Here are the risks.")]), delay_ms=0
    )
    api.services.providers["scripted"] = provider
    return provider


def _last_user(provider: ScriptedProvider) -> Message:
    assert provider.requests, "the model was never called"
    return [m for m in provider.requests[-1].messages if m.role == "user"][-1]


async def _upload(api: ApiClient, name: str, data: bytes) -> str:
    response = await api.post("/api/files", files={"file": (name, data)})
    assert response.status_code == 201, response.text
    file_id: str = response.json()["id"]
    return file_id


async def test_api_chat_sends_the_pdf_text_to_the_model(api: ApiClient) -> None:
    provider = _provider(api)
    file_id = await _upload(api, "report.pdf", samples.pdf(REPORT))
    content = [
        {"type": "text", "data": {"text": "list the risks"}},
        {"type": "file", "id": file_id, "name": "report.pdf", "mediaType": "application/pdf"},
    ]

    response = await api.post(
        "/api/chat", json={"messages": [{"role": "user", "content": content}]}
    )

    assert response.status_code == 200, response.text
    sent = _last_user(provider).text()
    assert "list the risks" in sent
    assert '<document name="report.pdf" type="application/pdf">' in sent
    assert "Risk one: supply chain delays" in sent
    assert "Risk two: currency exposure (FX)" in sent
    # What the client gets back keeps the reference, not the text.
    echoed = response.json()["messages"][0]["content"][1]
    assert echoed["type"] == "file"
    assert echoed["data"]["id"] == file_id


async def test_chat_completions_takes_an_uploaded_file_id(api: ApiClient) -> None:
    provider = _provider(api)
    data = samples.xlsx({"Budget": [["item", "cost"], ["servers", 1200]], "Staff": [["n"], [3]]})
    file_id = await _upload(api, "budget.xlsx", data)
    content = [
        {"type": "text", "text": "what do the servers cost?"},
        {"type": "file", "file": {"file_id": file_id}},
    ]

    response = await api.post(
        "/v1/chat/completions",
        json={"model": "scripted", "messages": [{"role": "user", "content": content}]},
    )

    assert response.status_code == 200, response.text
    sent = _last_user(provider).text()
    assert "## Sheet: Budget" in sent
    assert "| servers | 1200 |" in sent
    assert "## Sheet: Staff" in sent


async def test_chat_completions_stores_an_inline_csv_data_url(api: ApiClient) -> None:
    provider = _provider(api)
    url = "data:text/csv;base64," + base64.b64encode(samples.CSV_QUOTED).decode()
    content = [
        {"type": "text", "text": "who said hello?"},
        {"type": "file", "file": {"filename": "people.csv", "file_data": url}},
    ]

    response = await api.post(
        "/v1/chat/completions",
        json={"model": "scripted", "messages": [{"role": "user", "content": content}]},
    )

    assert response.status_code == 200, response.text
    sent = _last_user(provider)
    assert '| Smith, Ada | said "hello", then left | 12.5 |' in sent.text()
    assert "base64" not in sent.text()


async def test_responses_takes_an_input_file_by_id(api: ApiClient) -> None:
    provider = _provider(api)
    file_id = await _upload(api, "risks.json", json.dumps({"risks": ["fx", "supply"]}).encode())
    item = {
        "role": "user",
        "content": [
            {"type": "input_text", "text": "summarise"},
            {"type": "input_file", "file_id": file_id},
        ],
    }

    response = await api.post("/v1/responses", json={"model": "scripted", "input": [item]})

    assert response.status_code == 200, response.text
    sent = _last_user(provider).text()
    assert "JSON: object with 1 keys (risks: array of 2 items; first item: str)" in sent
    assert '"supply"' in sent


async def test_an_image_for_a_model_without_vision_is_400_naming_it(api: ApiClient) -> None:
    provider = _provider(api)
    file_id = await _upload(api, "dot.png", samples.png())
    content = [{"type": "file", "id": file_id, "name": "dot.png"}]

    response = await api.post(
        "/api/chat", json={"model": "scripted", "messages": [{"role": "user", "content": content}]}
    )

    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "model_lacks_vision"
    assert "`scripted`" in error["message"]
    assert not provider.requests


async def test_an_inline_image_url_for_a_model_without_vision_is_400(api: ApiClient) -> None:
    url = "data:image/png;base64," + base64.b64encode(samples.png()).decode()
    content = [{"type": "image_url", "image_url": {"url": url}}]

    response = await api.post(
        "/v1/chat/completions",
        json={"model": "scripted", "messages": [{"role": "user", "content": content}]},
    )

    assert response.status_code == 400, response.text
    assert "scripted" in response.json()["error"]["message"]


async def test_a_vision_model_receives_the_image_bytes(
    make_api: MakeApi, app_settings: Settings
) -> None:
    settings = app_settings.model_copy(
        update={"models_json": json.dumps([VISION]), "default_model": "scripted-vision"}
    )
    async with make_api(settings) as api:
        provider = _provider(api)
        file_id = await _upload(api, "dot.png", samples.png())
        content = [
            {"type": "text", "data": {"text": "what colour?"}},
            {"type": "file", "data": {"id": file_id, "name": "dot.png"}},
        ]
        response = await api.post(
            "/api/chat", json={"messages": [{"role": "user", "content": content}]}
        )

    assert response.status_code == 200, response.text
    images = [p for p in _last_user(provider).parts() if isinstance(p, FilePart)]
    assert len(images) == 1
    expected = "data:image/png;base64," + base64.b64encode(samples.png()).decode()
    assert images[0].data.url == expected


async def test_an_inline_data_url_over_the_cap_is_413(
    make_api: MakeApi, app_settings: Settings
) -> None:
    settings = app_settings.model_copy(update={"upload_max_bytes": 1000})
    data = b"a,b\n" * 400
    url = "data:text/csv;base64," + base64.b64encode(data).decode()
    content = [{"type": "file", "file": {"filename": "big.csv", "file_data": url}}]
    async with make_api(settings) as api:
        response = await api.post(
            "/v1/chat/completions",
            json={"model": "scripted", "messages": [{"role": "user", "content": content}]},
        )

    assert response.status_code == 413, response.text


async def test_a_document_cut_to_fit_is_announced_on_the_stream(
    make_api: MakeApi, app_settings: Settings
) -> None:
    small = {**VISION, "id": "scripted-small", "context_window": 2000, "max_output_tokens": 500}
    settings = app_settings.model_copy(update={"models_json": json.dumps([small])})
    rows = "".join(f"row{i},value number {i}\n" for i in range(1500))
    async with make_api(settings) as api:
        provider = _provider(api)
        file_id = await _upload(api, "big.csv", ("key,value\n" + rows).encode())
        content = [{"type": "file", "data": {"id": file_id, "name": "big.csv"}}]
        response = await api.post(
            "/api/chat",
            json={"messages": [{"role": "user", "content": content}], "stream": True},
        )

    frames = parse(response.text)
    start = next(f for f in frames if f.event == "run_start")
    assert start.data["context"]["truncated_documents"] == ["big.csv"]
    sent = _last_user(provider).text()
    assert "[... the document was cut here to fit ...]" in sent
    assert "row0,value number 0" not in sent  # a table, not the raw CSV
    assert "| row0 | value number 0 |" in sent
    assert "row1499" not in sent


async def _report_turn(api: ApiClient) -> tuple[str, list[dict[str, Any]]]:
    """A new conversation's URL and a turn's content asking about an uploaded PDF report."""
    file_id = await _upload(api, "report.pdf", samples.pdf(REPORT))
    conversation = (await api.post("/api/conversations", json={})).json()
    content: list[dict[str, Any]] = [
        {"type": "text", "data": {"text": "list the risks"}},
        {"type": "file", "fileId": file_id, "name": "report.pdf"},
    ]
    return f"/api/conversations/{conversation['id']}", content


async def test_a_conversation_turn_stores_the_reference_and_sends_the_text(
    api: ApiClient,
) -> None:
    provider = _provider(api)
    url, content = await _report_turn(api)
    file_id = content[1]["fileId"]

    started = await api.post(f"{url}/messages", json={"content": content})
    await api.get(started.json()["events_url"])
    detail = (await api.get(url)).json()

    assert "Risk two: currency exposure (FX)" in _last_user(provider).text()
    stored = detail["messages"][0]["content"]
    assert stored[1]["type"] == "file"
    assert stored[1]["data"]["id"] == file_id
    assert stored[1]["data"]["mimeType"] == "application/pdf"
    assert "Risk" not in json.dumps(stored)


async def _turn_while_out_of_reach(
    api: ApiClient, monkeypatch: pytest.MonkeyPatch, method: str, spared: int
) -> list[Frame]:
    """A conversation turn with a PDF whose run meets the database out of reach at
    `FileRepo.method`; its events to the end (a run that never ends fails, not hangs)."""
    url, content = await _report_turn(api)
    with monkeypatch.context() as outage:
        lose_connection_in(outage, FileRepo, method, spared=spared)
        started = await api.post(f"{url}/messages", json={"content": content})
        assert started.status_code == 202, started.text
        events = await asyncio.wait_for(api.get(started.json()["events_url"]), 60)
    return parse(events.text)


# The turn's admission reads the file's record once (get_many) before the run starts.
@pytest.mark.parametrize(("method", "spared"), [("extraction", 0), ("get_many", 1)])
async def test_a_document_read_while_the_database_is_out_of_reach_fails_the_run_retryable(
    api: ApiClient, monkeypatch: pytest.MonkeyPatch, method: str, spared: int
) -> None:
    provider = _provider(api)

    frames = await _turn_while_out_of_reach(api, monkeypatch, method, spared)

    # Not a note telling the model the file is unreadable, nor a run that never ends.
    assert frames[-1].event == "run_end"
    assert frames[-1].data["status"] == "failed"
    assert frames[-1].data["error"]["code"] == "database_unavailable"
    assert frames[-1].data["error"]["retryable"] is True
    assert not provider.requests


async def test_an_edited_message_with_a_file_sends_its_text(api: ApiClient) -> None:
    provider = _provider(api)
    conversation = (await api.post("/api/conversations", json={})).json()
    url = f"/api/conversations/{conversation['id']}"
    first = await api.post(f"{url}/messages", json={"content": "hello"})
    await api.get(first.json()["events_url"])
    message_id = (await api.get(url)).json()["messages"][0]["id"]
    file_id = await _upload(api, "report.pdf", samples.pdf(REPORT))
    content = [{"type": "file", "id": file_id, "name": "report.pdf"}]

    edited = await api.put(f"{url}/messages/{message_id}", json={"content": content})
    await api.get(edited.json()["events_url"])

    assert edited.status_code == 202, edited.text
    assert "Risk one: supply chain delays" in _last_user(provider).text()
    assert (await api.get(f"/api/files/{file_id}")).json()["conversation_id"] == conversation["id"]


async def test_bare_base64_file_data_reaches_the_model_through_the_sdk(api: ApiClient) -> None:
    # OpenAI documents `file_data` as base64; the SDK passes whatever the caller gives.
    provider = _provider(api)
    pdf = base64.b64encode(samples.pdf(REPORT)).decode()
    sdk = sdk_for(api)
    async with sdk:
        chat = await sdk.chat.completions.create(
            model="scripted",
            messages=[
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "list the risks"},
                        {"type": "file", "file": {"filename": "r.pdf", "file_data": pdf}},
                    ],
                }
            ],
        )
        assert chat.choices[0].message.content == "Here are the risks."
        assert "Risk two: currency exposure (FX)" in _last_user(provider).text()

        await sdk.responses.create(
            model="scripted",
            input=[
                {
                    "role": "user",
                    "content": [{"type": "input_file", "filename": "r.pdf", "file_data": pdf}],
                }
            ],
        )
        assert "Risk one: supply chain delays" in _last_user(provider).text()


async def test_an_input_file_by_url_is_400_saying_what_to_send(api: ApiClient) -> None:
    sdk = sdk_for(api)
    async with sdk:
        with pytest.raises(openai.BadRequestError) as refused:
            await sdk.responses.create(
                model="scripted",
                input=[
                    {
                        "role": "user",
                        "content": [
                            {"type": "input_file", "file_url": "https://example.com/r.pdf"}
                        ],
                    }
                ],
            )

    error = refused.value.body
    assert isinstance(error, dict)
    assert "file_url" in error["message"] and "file_id" in error["message"]


async def test_a_cancel_while_a_document_is_read_ends_the_run_cancelled(
    api: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Reading an attachment (a large PDF's text) can take seconds; a cancel meanwhile ends
    # the run with run_end like any cancel, where it escaped the turn and its readers
    # waited for ever.
    provider = _provider(api)
    url, content = await _report_turn(api)
    reading = asyncio.Event()

    async def slow_read(*args: Any, **kwargs: Any) -> None:
        reading.set()
        await asyncio.Event().wait()  # until cancelled

    monkeypatch.setattr(FileRepo, "extraction", slow_read)
    started = await api.post(f"{url}/messages", json={"content": content})
    assert started.status_code == 202, started.text
    await asyncio.wait_for(reading.wait(), 30)

    cancelled = await api.post(f"{url}/runs/{started.json()['run_id']}/cancel")
    events = await asyncio.wait_for(api.get(started.json()["events_url"]), 60)

    assert cancelled.status_code == 200, cancelled.text
    frames = parse(events.text)
    assert frames[-1].event == "run_end"
    assert frames[-1].data["status"] == "cancelled"
    assert not provider.requests
