"""Bearer JWTs: what verifies, and that every failure is the same 401."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from tests.auth.tokens import (
    HS_SECRET,
    Claims,
    bearer,
    ec_keys,
    es_token,
    hs_signed_with_public_key,
    hs_token,
    jwks,
    rs_token,
    rsa_keys,
    sqlite_settings,
    unsigned_token,
)
from tests.fakes.db import MakeApi

UNAUTHORIZED = {"error": {"code": "unauthorized", "message": "Missing or invalid credentials."}}


def assert_unauthorized(response: Any) -> None:
    assert response.status_code == 401
    assert response.json() == UNAUTHORIZED
    assert response.headers["www-authenticate"].startswith("Bearer")


@pytest.fixture
def hs_settings(tmp_path: Path) -> Any:
    return sqlite_settings(
        tmp_path,
        jwt_secret=SecretStr(HS_SECRET),
        jwt_issuer="https://idp.test",
        jwt_audience="chat-bff",
    )


def good(**kw: Any) -> Claims:
    extra = {"iss": "https://idp.test", "aud": "chat-bff", **kw.pop("extra", {})}
    return Claims(extra=extra, **kw)


async def test_a_valid_hs256_token_makes_its_subject_the_caller(
    make_api: MakeApi, hs_settings: Any
) -> None:
    async with make_api(hs_settings) as api:
        response = await api.get(
            "/api/me", headers=bearer(hs_token(good(sub="alice", roles=["user", "admin"])))
        )
    assert response.status_code == 200
    assert response.json() == {"user_id": "alice", "roles": ["admin", "user"], "method": "jwt"}


@pytest.mark.parametrize(
    "token",
    [
        pytest.param(lambda: hs_token(good(exp_in=-3600)), id="expired"),
        pytest.param(lambda: hs_token(good(exp_in=None)), id="no-exp"),
        pytest.param(lambda: hs_token(good(extra={"aud": "someone-else"})), id="wrong-audience"),
        pytest.param(lambda: hs_token(good(extra={"iss": "https://evil.test"})), id="wrong-issuer"),
        pytest.param(lambda: unsigned_token(good()), id="alg-none"),
        pytest.param(lambda: hs_token(good(), secret="x" * 40), id="other-secret"),
        pytest.param(lambda: _tampered(hs_token(good(sub="alice"))), id="tampered-payload"),
        pytest.param(lambda: hs_token(good())[:-4] + "AAAA", id="tampered-signature"),
        pytest.param(lambda: rs_token(good()), id="rs256-without-public-key"),
        pytest.param(lambda: "not-a-jwt", id="garbage"),
        pytest.param(lambda: hs_token(good(sub="")), id="empty-subject"),
        pytest.param(lambda: hs_token(good(sub="x" * 256)), id="overlong-subject"),
    ],
)
async def test_every_bad_token_is_the_same_401(
    make_api: MakeApi, hs_settings: Any, token: Any
) -> None:
    async with make_api(hs_settings) as api:
        response = await api.get("/api/models", headers=bearer(token()))
    assert_unauthorized(response)


def _tampered(token: str) -> str:
    import base64

    header, payload, signature = token.split(".")
    data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    data["sub"] = "mallory"
    forged = base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()
    return f"{header}.{forged}.{signature}"


async def test_no_credentials_is_401_when_auth_is_configured(
    make_api: MakeApi, hs_settings: Any
) -> None:
    async with make_api(hs_settings) as api:
        assert_unauthorized(await api.get("/api/models"))
        assert_unauthorized(await api.get("/api/models", headers={"Authorization": "Basic Zm9v"}))


async def test_rs256_verifies_with_the_public_key(make_api: MakeApi, tmp_path: Path) -> None:
    settings = sqlite_settings(tmp_path, jwt_public_key=rsa_keys().public_pem)
    async with make_api(settings) as api:
        ok = await api.get("/api/me", headers=bearer(rs_token(sub="bob")))
        assert ok.status_code == 200
        assert ok.json()["user_id"] == "bob"
        assert_unauthorized(await api.get("/api/me", headers=bearer(es_token(sub="bob"))))


async def test_hs256_signed_with_the_public_key_is_refused(
    make_api: MakeApi, tmp_path: Path
) -> None:
    """Algorithm confusion: the public key PEM used as an HMAC secret must not verify."""
    settings = sqlite_settings(tmp_path, jwt_public_key=rsa_keys().public_pem)
    async with make_api(settings) as api:
        response = await api.get("/api/me", headers=bearer(hs_signed_with_public_key(sub="eve")))
    assert_unauthorized(response)


async def test_hs256_with_the_public_key_is_refused_even_when_a_secret_is_also_set(
    make_api: MakeApi, tmp_path: Path
) -> None:
    settings = sqlite_settings(
        tmp_path, jwt_public_key=rsa_keys().public_pem, jwt_secret=SecretStr(HS_SECRET)
    )
    async with make_api(settings) as api:
        assert_unauthorized(
            await api.get("/api/me", headers=bearer(hs_signed_with_public_key(sub="eve")))
        )
        assert (await api.get("/api/me", headers=bearer(hs_token(sub="a")))).status_code == 200
        assert (await api.get("/api/me", headers=bearer(rs_token(sub="b")))).status_code == 200


async def test_es256_verifies_with_an_ec_public_key(make_api: MakeApi, tmp_path: Path) -> None:
    settings = sqlite_settings(tmp_path, jwt_public_key=ec_keys().public_pem)
    async with make_api(settings) as api:
        ok = await api.get("/api/me", headers=bearer(es_token(sub="carol")))
        assert ok.json()["user_id"] == "carol"
        assert_unauthorized(await api.get("/api/me", headers=bearer(rs_token(sub="carol"))))


async def test_jwks_file_keys_are_chosen_by_kid(make_api: MakeApi, tmp_path: Path) -> None:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(jwks(kid="k1")))
    settings = sqlite_settings(tmp_path, jwt_jwks_file=path)
    async with make_api(settings) as api:
        ok = await api.get("/api/me", headers=bearer(rs_token(sub="dave", kid="k1")))
        assert ok.json()["user_id"] == "dave"
        assert_unauthorized(
            await api.get("/api/me", headers=bearer(rs_token(sub="dave", kid="unknown")))
        )


async def test_roles_come_from_the_configured_claim(make_api: MakeApi, tmp_path: Path) -> None:
    settings = sqlite_settings(
        tmp_path, jwt_secret=SecretStr(HS_SECRET), jwt_roles_claim="realm_access.roles"
    )
    claims = Claims(sub="erin", roles=None, extra={"realm_access": {"roles": ["admin", "ops"]}})
    async with make_api(settings) as api:
        response = await api.get("/api/me", headers=bearer(hs_token(claims)))
    assert response.json()["roles"] == ["admin", "ops"]


async def test_a_token_without_roles_is_a_plain_user(make_api: MakeApi, tmp_path: Path) -> None:
    settings = sqlite_settings(tmp_path, jwt_secret=SecretStr(HS_SECRET))
    async with make_api(settings) as api:
        response = await api.get("/api/me", headers=bearer(hs_token(Claims(roles=None))))
    assert response.json()["roles"] == ["user"]
