"""Identity settings: how callers prove who they are (JWT, stream tokens, the local user)
and how tools forward the user's identity downstream. Part of `app.settings.Settings`
(which inherits them), kept apart so each settings module stays one topic."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings


class IdentitySettings(BaseSettings):
    # --- identity --------------------------------------------------------------------
    local_user_id: str = Field(
        default="local", description="The caller in development mode (no auth configured)."
    )
    jwt_secret: SecretStr | None = Field(default=None, description="HS256 shared secret.")
    jwt_public_key: str | None = Field(
        default=None, description="PEM public key (RSA or EC) for RS256 / ES256 tokens."
    )
    jwt_public_key_file: Path | None = Field(
        default=None, description="File holding the PEM public key (instead of JWT_PUBLIC_KEY)."
    )
    jwt_jwks_file: Path | None = Field(
        default=None, description='JWKS file (`{"keys": [...]}`); keys chosen by `kid`.'
    )
    jwt_issuer: str | None = Field(default=None, description="Required `iss`, when set.")
    jwt_audience: str | None = Field(default=None, description="Required `aud`, when set.")
    jwt_roles_claim: str = Field(
        default="roles", description="Claim holding the roles; dotted path for nested claims."
    )
    jwt_leeway_seconds: float = Field(
        default=30.0, ge=0, description="Clock skew allowed on `exp`."
    )
    stream_token_secret: SecretStr | None = Field(
        default=None,
        description="Signs EventSource stream tokens; derived from JWT_SECRET when unset.",
    )
    stream_token_ttl_seconds: int = Field(
        default=300,
        ge=1,
        le=86_400,
        description="Lifetime of a stream token (`?token=` on EventSource URLs).",
    )

    # --- identity forwarding (tools calling downstream APIs as the user) -------------
    forward_token_secret: SecretStr | None = Field(
        default=None,
        description="Signs the short-lived tokens minted for `minted` forwarding tools (and "
        "the service's own token beside them); minting is off when unset.",
    )
    forward_token_issuer: str = Field(
        default="chat-bff", description="`iss` of minted tokens, and the service's `sub`."
    )
    forward_token_ttl_seconds: int = Field(
        default=60, ge=5, le=3600, description="Lifetime of a minted forwarding token."
    )
    forward_bearer_tokens: bool = Field(
        default=False,
        description="Let `bearer` forwarding tools pass the caller's own JWT downstream.",
    )
