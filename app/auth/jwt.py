"""Bearer JWT verification: HS256 with a shared secret, RS256/ES256 with a key or JWKS.

Algorithm confusion is closed by construction: each configured key carries the one
algorithm family it may verify (the shared secret only HS256, an RSA key only RS*, an EC
key only ES*), and the token's `alg` header only selects among them. `alg: none` is in no
list, so it never verifies. `exp` and `sub` are required; `iss` and `aud` are checked when
configured.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import load_pem_public_key
from jwt import PyJWK

from app.auth.errors import Unauthorized
from app.domain.text import valid_json

MAX_SUBJECT_LENGTH = 255  # owner ids are String(255) in every table
_RSA_ALGS = ("RS256", "RS384", "RS512")
_EC_ALGS = {"P-256": "ES256", "P-384": "ES384", "P-521": "ES512"}
_EC_CURVES = {"secp256r1": "ES256", "secp384r1": "ES384", "secp521r1": "ES512"}


@dataclass(frozen=True)
class Claims:
    subject: str
    roles: frozenset[str]
    payload: Mapping[str, Any]


@dataclass(frozen=True)
class _Key:
    key: Any = field(repr=False)  # the shared secret must not show up in a repr or traceback
    algorithms: tuple[str, ...] = ()


class JwtVerifier:
    """Verifies bearer JWTs against the configured keys."""

    def __init__(
        self,
        *,
        secret: str | None = None,
        public_key_pem: str | None = None,
        jwks: Mapping[str, Any] | None = None,
        issuer: str | None = None,
        audience: str | None = None,
        roles_claim: str = "roles",
        leeway: float = 30.0,
    ) -> None:
        self._secret = _Key(secret.encode(), ("HS256",)) if secret else None
        self._public = _public_key(public_key_pem) if public_key_pem else None
        self._jwks = _jwks_keys(jwks) if jwks is not None else {}
        self._issuer = issuer
        self._audience = audience
        self._roles_claim = roles_claim
        self._leeway = leeway
        if self._secret is None and self._public is None and not self._jwks:
            raise ValueError("JwtVerifier needs a secret, a public key or a JWKS")

    def _key_for(self, header: Mapping[str, Any]) -> _Key:
        alg = header.get("alg")
        if not isinstance(alg, str):
            raise Unauthorized("jwt: no alg")
        if alg.startswith("HS"):
            if self._secret is None:
                raise Unauthorized("jwt: HMAC token but no shared secret configured")
            return self._secret
        kid = header.get("kid")
        if self._jwks:
            if isinstance(kid, str) and kid in self._jwks:
                return self._jwks[kid]
            if kid is None and len(self._jwks) == 1:
                return next(iter(self._jwks.values()))
            if self._public is None:
                raise Unauthorized("jwt: unknown kid")
        if self._public is None:
            raise Unauthorized("jwt: asymmetric token but no public key configured")
        return self._public

    def verify(self, token: str) -> Claims:
        try:
            header = jwt.get_unverified_header(token)
            key = self._key_for(header)
            payload: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=list(key.algorithms),
                audience=self._audience,
                issuer=self._issuer,
                leeway=self._leeway,
                options={
                    "require": ["exp", "sub"],
                    "verify_aud": self._audience is not None,
                    "verify_iss": self._issuer is not None,
                },
            )
        except jwt.PyJWTError as exc:
            raise Unauthorized(f"jwt: {type(exc).__name__}") from None
        # Claims are text entering the service: a signed `sub` may still hold a lone
        # surrogate or NUL, which no log line, header or database column can take.
        payload = valid_json(payload)
        subject = payload.get("sub")
        if not isinstance(subject, str) or not subject.strip():
            raise Unauthorized("jwt: empty subject")
        if len(subject) > MAX_SUBJECT_LENGTH:
            raise Unauthorized("jwt: subject longer than an owner id column")
        return Claims(subject=subject, roles=self._roles(payload), payload=payload)

    def _roles(self, payload: Mapping[str, Any]) -> frozenset[str]:
        value: Any = payload
        for part in self._roles_claim.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        if value is None:
            return frozenset({"user"})
        if isinstance(value, str):
            return frozenset(value.replace(",", " ").split())
        if isinstance(value, list):
            return frozenset(str(v) for v in value if isinstance(v, str | int))
        raise Unauthorized("jwt: malformed roles claim")


def _public_key(pem: str) -> _Key:
    key = load_pem_public_key(pem.encode())
    if isinstance(key, rsa.RSAPublicKey):
        return _Key(key, _RSA_ALGS)
    if isinstance(key, ec.EllipticCurvePublicKey):
        alg = _EC_CURVES.get(key.curve.name)
        if alg is not None:
            return _Key(key, (alg,))
    raise ValueError("JWT public key must be an RSA or a P-256/384/521 EC key")


def _jwks_keys(jwks: Mapping[str, Any]) -> dict[str, _Key]:
    keys: dict[str, _Key] = {}
    for index, data in enumerate(jwks.get("keys", [])):
        kty = data.get("kty")
        if kty == "RSA":
            algs: tuple[str, ...] = (data["alg"],) if data.get("alg") in _RSA_ALGS else _RSA_ALGS
        elif kty == "EC" and data.get("crv") in _EC_ALGS:
            algs = (_EC_ALGS[data["crv"]],)
        else:
            # Symmetric (`oct`) keys in a JWKS would reopen algorithm confusion: skipped.
            continue
        if data.get("use", "sig") != "sig":
            continue
        jwk = PyJWK.from_dict(dict(data))
        keys[str(data.get("kid", f"key-{index}"))] = _Key(jwk.key, algs)
    if not keys:
        raise ValueError("the JWKS holds no usable RSA or EC signing key")
    return keys


def load_jwks(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    if not isinstance(data, dict):
        raise ValueError("JWKS file must hold a JSON object with `keys`")
    return data
