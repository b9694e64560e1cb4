"""API keys: created by an admin, shown once, stored hashed, revocable, audited."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import SecretStr
from sqlalchemy import text

from app.settings import Settings
from tests.auth.tokens import HS_SECRET, bearer, hs_token
from tests.fakes.db import MakeApi

ADMIN = bearer(hs_token(sub="root", roles=["admin", "user"]))
USER = bearer(hs_token(sub="alice", roles=["user"]))
UNAUTHORIZED = {"error": {"code": "unauthorized", "message": "Missing or invalid credentials."}}


def with_jwt(settings: Settings) -> Settings:
    return settings.model_copy(update={"jwt_secret": SecretStr(HS_SECRET)})


async def create_key(api: Any, **body: Any) -> dict[str, Any]:
    payload = {"name": "ci bot", "owner_id": "svc-ci", "roles": ["user"], **body}
    response = await api.post("/api/admin/api-keys", json=payload, headers=ADMIN)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


async def test_a_created_key_authenticates_as_its_owner_with_its_roles(
    make_api: MakeApi, app_settings: Settings
) -> None:
    async with make_api(with_jwt(app_settings)) as api:
        created = await create_key(api, roles=["user", "reports"])
        for headers in ({"X-API-Key": created["key"]}, bearer(created["key"])):
            me = await api.get("/api/me", headers=headers)
            assert me.json() == {
                "user_id": "svc-ci",
                "roles": ["reports", "user"],
                "method": "api_key",
            }


async def test_the_key_is_shown_once_and_stored_only_as_a_digest(
    make_api: MakeApi, app_settings: Settings
) -> None:
    async with make_api(with_jwt(app_settings)) as api:
        created = await create_key(api)
        key = created["key"]
        assert key.startswith("cbff_") and len(key) > 40
        assert created["prefix"] == key[:13]
        listed = (await api.get("/api/admin/api-keys", headers=ADMIN)).json()["data"]
        assert [k["id"] for k in listed] == [created["id"]]
        assert key not in str(listed) and "key" not in listed[0]
        async with api.services.db.sessions() as session:
            rows = (await session.execute(text("SELECT * FROM api_keys"))).all()
        assert len(rows) == 1
        assert key not in str(rows)


async def test_a_revoked_key_is_401_at_once(make_api: MakeApi, app_settings: Settings) -> None:
    async with make_api(with_jwt(app_settings)) as api:
        created = await create_key(api)
        assert (await api.get("/api/me", headers={"X-API-Key": created["key"]})).status_code == 200
        revoked = await api.delete(f"/api/admin/api-keys/{created['id']}", headers=ADMIN)
        assert revoked.status_code == 200
        assert revoked.json()["revoked_at"] is not None
        response = await api.get("/api/me", headers={"X-API-Key": created["key"]})
        assert response.status_code == 401
        assert response.json() == UNAUTHORIZED
        again = await api.delete(f"/api/admin/api-keys/{created['id']}", headers=ADMIN)
        assert again.status_code == 200


async def test_an_unknown_key_is_401_even_in_development_mode(
    make_api: MakeApi, app_settings: Settings
) -> None:
    async with make_api(app_settings) as api:
        response = await api.get("/api/me", headers={"X-API-Key": "cbff_" + "x" * 43})
    assert response.status_code == 401
    assert response.json() == UNAUTHORIZED


async def test_key_creation_and_revocation_are_audited_without_the_key(
    make_api: MakeApi, app_settings: Settings
) -> None:
    async with make_api(with_jwt(app_settings)) as api:
        created = await create_key(api)
        await api.delete(f"/api/admin/api-keys/{created['id']}", headers=ADMIN)
        audit = await api.get(
            "/api/admin/audit", params={"target_id": created["id"]}, headers=ADMIN
        )
    assert audit.status_code == 200
    entries = audit.json()["data"]
    assert [(e["action"], e["actor_id"]) for e in entries] == [
        ("api_key.revoke", "root"),
        ("api_key.create", "root"),
    ]
    assert created["key"] not in audit.text


async def test_the_audit_log_pages_with_a_cursor(make_api: MakeApi, app_settings: Settings) -> None:
    async with make_api(with_jwt(app_settings)) as api:
        for n in range(3):
            await create_key(api, name=f"k{n}")
        first = (await api.get("/api/admin/audit", params={"limit": 2}, headers=ADMIN)).json()
        second = (
            await api.get(
                "/api/admin/audit",
                params={"limit": 2, "cursor": first["next_cursor"]},
                headers=ADMIN,
            )
        ).json()
    assert len(first["data"]) == 2 and len(second["data"]) == 1
    assert second["next_cursor"] is None
    names = [e["details"]["name"] for e in first["data"] + second["data"]]
    assert names == ["k2", "k1", "k0"]


async def test_admin_routes_are_404_for_non_admins(
    make_api: MakeApi, app_settings: Settings
) -> None:
    async with make_api(with_jwt(app_settings)) as api:
        created = await create_key(api)
        calls = [
            api.get("/api/admin/audit", headers=USER),
            api.get("/api/admin/api-keys", headers=USER),
            api.post("/api/admin/api-keys", json={"name": "x", "owner_id": "alice"}, headers=USER),
            api.delete(f"/api/admin/api-keys/{created['id']}", headers=USER),
        ]
        for call in calls:
            response = await call
            assert response.status_code == 404
            assert response.json()["error"]["code"] == "not_found"
        still = await api.get("/api/me", headers={"X-API-Key": created["key"]})
        assert still.status_code == 200


async def test_a_key_body_cannot_smuggle_fields(make_api: MakeApi, app_settings: Settings) -> None:
    async with make_api(with_jwt(app_settings)) as api:
        response = await api.post(
            "/api/admin/api-keys",
            json={"name": "x", "owner_id": "a", "key_hash": "0" * 64},
            headers=ADMIN,
        )
    assert response.status_code == 422


async def test_the_openai_sdk_authenticates_with_an_api_key(
    make_api: MakeApi, app_settings: Settings
) -> None:
    import httpx2
    import openai

    async with make_api(with_jwt(app_settings)) as api:
        created = await create_key(api)
        http = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=api.app))

        def client(key: str) -> openai.AsyncOpenAI:
            return openai.AsyncOpenAI(
                api_key=key, base_url="http://test/v1", http_client=http, max_retries=0
            )

        messages: Any = [{"role": "user", "content": "hi"}]
        completion = await client(created["key"]).chat.completions.create(
            model="scripted", messages=messages
        )
        assert completion.choices[0].message.content
        with pytest.raises(openai.AuthenticationError) as info:
            await client("cbff_" + "z" * 43).chat.completions.create(
                model="scripted", messages=messages
            )
        assert info.value.status_code == 401
        assert info.value.body == {
            "message": "Missing or invalid credentials.",
            "type": "authentication_error",
            "param": None,
            "code": "unauthorized",
        }
        await http.aclose()


@pytest.mark.parametrize(
    "cursor", ["garbage", "2026-01-01T00:00:00|aud_x", "2026-01-01T00:00:00+00:00|", "|"]
)
async def test_a_bad_audit_cursor_is_400(
    make_api: MakeApi, app_settings: Settings, cursor: str
) -> None:
    async with make_api(with_jwt(app_settings)) as api:
        response = await api.get("/api/admin/audit", params={"cursor": cursor}, headers=ADMIN)
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "cursor"
