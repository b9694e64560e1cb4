"""Keys and tokens for tests: an HS256 secret, an RSA and an EC key pair, a JWT factory."""

from __future__ import annotations

import base64
import json
import time
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

HS_SECRET = "test-secret-7c1f2a9e4b6d8f0a3c5e7b9d1f3a5c7e"


@dataclass(frozen=True)
class KeyPair:
    private_pem: str
    public_pem: str


@cache
def rsa_keys() -> KeyPair:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return _pair(key)


@cache
def ec_keys() -> KeyPair:
    return _pair(ec.generate_private_key(ec.SECP256R1()))


def _pair(key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey) -> KeyPair:
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return KeyPair(private, public)


@dataclass
class Claims:
    sub: str = "alice"
    roles: list[str] | None = field(default_factory=lambda: ["user"])
    exp_in: float | None = 86_400  # some tests mint at import; a slow suite must not outlive them
    extra: dict[str, Any] = field(default_factory=dict)

    def payload(self) -> dict[str, Any]:
        now = int(time.time())
        data: dict[str, Any] = {"sub": self.sub, "iat": now, **self.extra}
        if self.roles is not None:
            data["roles"] = self.roles
        if self.exp_in is not None:
            data["exp"] = now + int(self.exp_in)
        return data


def hs_token(claims: Claims | None = None, *, secret: str = HS_SECRET, **kw: Any) -> str:
    return jwt.encode((claims or Claims(**kw)).payload(), secret, algorithm="HS256")


def rs_token(claims: Claims | None = None, *, kid: str | None = None, **kw: Any) -> str:
    headers = {"kid": kid} if kid else None
    return jwt.encode(
        (claims or Claims(**kw)).payload(),
        rsa_keys().private_pem,
        algorithm="RS256",
        headers=headers,
    )


def es_token(claims: Claims | None = None, **kw: Any) -> str:
    return jwt.encode((claims or Claims(**kw)).payload(), ec_keys().private_pem, algorithm="ES256")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unsigned_token(claims: Claims | None = None, **kw: Any) -> str:
    """`alg: none`, built by hand (PyJWT refuses to make one with a key set)."""
    header = _b64(json.dumps({"alg": "none", "typ": "JWT"}).encode())
    body = _b64(json.dumps((claims or Claims(**kw)).payload()).encode())
    return f"{header}.{body}."


def hs_signed_with_public_key(claims: Claims | None = None, **kw: Any) -> str:
    """The classic confusion attack: HS256 keyed with the server's RSA public key PEM."""
    import hashlib
    import hmac

    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = _b64(json.dumps((claims or Claims(**kw)).payload()).encode())
    signing_input = f"{header}.{body}".encode()
    mac = hmac.new(rsa_keys().public_pem.encode(), signing_input, hashlib.sha256).digest()
    return f"{header}.{body}.{_b64(mac)}"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def jwks(kid: str = "k1") -> dict[str, Any]:
    from jwt.algorithms import RSAAlgorithm

    public = serialization.load_pem_public_key(rsa_keys().public_pem.encode())
    assert isinstance(public, rsa.RSAPublicKey)
    jwk = json.loads(RSAAlgorithm.to_jwk(public))
    jwk.update({"kid": kid, "use": "sig", "alg": "RS256"})
    return {"keys": [jwk]}


def sqlite_settings(tmp_path: Any, **overrides: Any) -> Any:
    """Settings on a fresh SQLite file, for tests where the database does not matter."""
    from app.settings import Settings

    values: dict[str, Any] = {
        "database_url": f"sqlite+aiosqlite:///{tmp_path / 'auth.db'}",
        "environment": "test",
        "log_json": False,
        "scripted_delay_ms": 0,
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)
