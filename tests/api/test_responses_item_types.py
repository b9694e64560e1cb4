"""An input item whose `type` is not a string (an object, a list) is a 400 naming the item,
in OpenAI's error shape, on every route that reads Responses items: it was a 500 (the
type was looked up in a set of item types)."""

from __future__ import annotations

from typing import Any

import pytest

from app.settings import Settings
from tests.fakes.db import MakeApi


@pytest.mark.parametrize("kind", [{}, [], ["message"]], ids=["object", "empty-list", "list"])
async def test_an_item_type_that_is_not_a_string_is_400(
    make_api: MakeApi, app_settings: Settings, kind: Any
) -> None:
    item = {"type": kind, "role": "user", "content": "Hi"}
    async with make_api(app_settings) as api:
        cid = (await api.post("/v1/conversations", json={})).json()["id"]
        answers = [
            await api.post("/v1/responses", json={"model": "scripted", "input": [item]}),
            await api.post("/v1/conversations", json={"items": [item]}),
            await api.post(f"/v1/conversations/{cid}/items", json={"items": [item]}),
        ]
        listed = (await api.get(f"/v1/conversations/{cid}/items")).json()["data"]

    for answer in answers:
        assert answer.status_code == 400, answer.text
        error = answer.json()["error"]
        assert (error["type"], error["code"]) == ("invalid_request_error", "invalid_request")
        assert error["param"].endswith("[0]"), error
    assert listed == []
