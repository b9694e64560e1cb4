"""One settings class, read from the environment and `.env`, built by `get_settings()`.

Nothing here runs at import time: `create_app(settings)` receives an instance, and tests
build their own. Provider settings use the names the official SDKs read
(`OPENAI_API_KEY`, `OPENAI_BASE_URL`, `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

Environment = Literal["development", "test", "production"]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_file=".env", env_file_encoding="utf-8", extra="ignore", case_sensitive=False
    )

    # --- service ---------------------------------------------------------------------
    environment: Environment = Field(default="development", description="Deployment mode.")
    log_level: str = Field(default="INFO", description="Root log level.")
    log_json: bool = Field(default=True, description="Structured JSON log lines.")
    database_url: str = Field(
        default="sqlite+aiosqlite:///./chat-bff.db",
        description="SQLAlchemy async URL; SQLite file by default, Postgres in production.",
    )
    migrate_on_start: bool = Field(
        default=True, description="Run Alembic upgrade head at start-up."
    )
    redis_url: str | None = Field(
        default=None, description="Redis, to share rate limits between instances."
    )
    redis_pool_size: int = Field(
        default=50,
        ge=1,
        le=10_000,
        description="Connections the limiter keeps to Redis at most (per process).",
    )
    redis_pool_timeout_seconds: float = Field(
        default=1.0,
        gt=0,
        le=60,
        description="How long a limit check waits for a free Redis connection before the "
        "request is refused with 503 limiter_busy.",
    )
    redis_timeout_seconds: float = Field(
        default=1.0,
        gt=0,
        le=60,
        description="Connect and reply timeout of one Redis command; past it Redis counts "
        "as down (checks let requests through).",
    )
    cors_origins: list[str] = Field(default_factory=list, description="Allowed CORS origins.")
    max_body_bytes: int = Field(default=1_000_000, description="Request body size cap.")
    heartbeat_seconds: float = Field(default=15.0, description="SSE heartbeat interval.")
    stream_send_timeout_seconds: float = Field(
        default=60.0,
        gt=0,
        description="An SSE reader whose socket takes nothing for this long is dropped "
        "(it can resume with Last-Event-ID).",
    )
    shutdown_timeout_seconds: float = Field(
        default=6.0,
        gt=0,
        description="SIGTERM drain budget: new requests 503, runs checkpointed, streams "
        "ended; keep it below the server's graceful timeout and the container's stop "
        "timeout (10 s by default).",
    )

    # --- providers (names as the official SDKs read them) ----------------------------
    openai_api_key: SecretStr | None = Field(default=None, description="OpenAI key.")
    openai_base_url: str | None = Field(
        default=None, description="Any OpenAI-compatible server (Ollama, vLLM, LM Studio)."
    )
    anthropic_api_key: SecretStr | None = Field(default=None, description="Anthropic key.")
    anthropic_base_url: str | None = Field(default=None, description="Anthropic API base URL.")
    provider_timeout_seconds: float = Field(default=60.0, description="Upstream read timeout.")
    provider_connect_timeout_seconds: float = Field(default=10.0, description="Connect timeout.")
    provider_max_retries: int = Field(
        default=2, description="Retries before the first byte (429, 5xx, connection errors)."
    )

    # --- models ----------------------------------------------------------------------
    models_file: Path | None = Field(
        default=None, description="JSON file with the model catalogue (the allowlist)."
    )
    models_json: str | None = Field(
        default=None, description="The model catalogue as inline JSON (overrides models_file)."
    )
    default_model: str | None = Field(default=None, description="Catalogue id used by default.")
    scripted_script: Path | None = Field(
        default=None, description="Script for the offline scripted provider."
    )
    scripted_delay_ms: float = Field(
        default=20.0, description="Pause between scripted chunks (realistic pacing)."
    )

    # --- agent -----------------------------------------------------------------------
    max_iterations: int = Field(default=8, description="Model calls allowed in one run.")
    tool_timeout_seconds: float = Field(default=30.0, description="Default per-tool timeout.")
    run_timeout_seconds: float = Field(default=600.0, description="Wall-clock cap of a run.")
    run_lease_seconds: float = Field(
        default=15.0,
        gt=0,
        description="A run whose process has not renewed it for this long is closed as "
        "interrupted (the process died); its concurrent-run slot lapses as soon.",
    )

    # --- tools -----------------------------------------------------------------------
    tool_modules: list[str] = Field(
        default_factory=list,
        description="Importable modules exposing `register(registry)` (JSON list in env).",
    )
    tool_allow: list[str] | None = Field(
        default=None, description="Tool name patterns this deployment offers; all if unset."
    )
    tool_deny: list[str] = Field(
        default_factory=list, description="Tool name patterns never offered to any model."
    )
    tool_model_allow: dict[str, list[str]] = Field(
        default_factory=dict, description="Per model id: the only tool patterns it may use."
    )
    tool_model_deny: dict[str, list[str]] = Field(
        default_factory=dict, description="Per model id: tool patterns it may not use."
    )
    approval_ttl_seconds: float = Field(
        default=3600.0, description="How long a pending tool approval stays decidable."
    )
    example_tools_enabled: bool | None = Field(
        default=None, description="The example knowledge-graph tools; on in development."
    )

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
    jwt_leeway_seconds: float = Field(default=30.0, description="Clock skew allowed on `exp`.")
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

    # --- limits ----------------------------------------------------------------------
    rate_limit_requests_per_minute: int = Field(
        default=600, ge=0, description="Requests per caller per minute; 0 disables the limit."
    )
    rate_limit_concurrent_runs: int = Field(
        default=8, ge=0, description="Runs one caller may have going at once; 0 disables."
    )
    rate_limit_tokens_per_day: int = Field(
        default=0, ge=0, description="Model tokens (in + out) per caller per UTC day; 0 disables."
    )
    rate_limit_roles: dict[str, dict[str, int]] = Field(
        default_factory=dict,
        description='Per-role overrides, e.g. `{"admin": {"requests_per_minute": 0}}`.',
    )

    @property
    def auth_configured(self) -> bool:
        """True when callers must prove who they are (a JWT key of some kind is set)."""
        return (
            self.jwt_secret is not None
            or bool(self.jwt_public_key)
            or self.jwt_public_key_file is not None
            or self.jwt_jwks_file is not None
        )

    @model_validator(mode="after")
    def _refuse_insecure_production(self) -> Settings:
        if self.environment != "production":
            return self
        if not self.auth_configured:
            raise ValueError(
                "production needs authentication: set JWT_SECRET, JWT_PUBLIC_KEY(_FILE) "
                "or JWT_JWKS_FILE"
            )
        for name in ("jwt_secret", "stream_token_secret"):
            value = getattr(self, name)
            if value is not None and _weak_secret(value.get_secret_value()):
                raise ValueError(f"{name.upper()} is too weak for production (32+ random chars)")
        return self


_DEFAULT_SECRETS = frozenset(
    {"changeme", "change-me", "change_me", "secret", "password", "jwt-secret", "dev", "test"}
)


def _weak_secret(secret: str) -> bool:
    """Short, a well-known default, or made of few distinct characters."""
    lowered = secret.lower()
    return (
        len(secret) < 32
        or lowered in _DEFAULT_SECRETS
        or any(lowered.startswith(d) for d in ("change-me", "changeme", "replace-me"))
        or len(set(secret)) < 10
    )


def get_settings() -> Settings:
    """Build settings from the environment; call it at start-up, never at import time."""
    return Settings()
