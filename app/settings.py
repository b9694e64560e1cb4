"""One settings class, read from the environment and `.env`, built by `get_settings()`.

Nothing here runs at import time: `create_app(settings)` receives an instance, and tests
build their own. Provider settings use the names the official SDKs read
(`OPENAI_API_KEY`, `OPENAI_BASE_URL`, `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`).

What can be checked offline is checked here: a bad setting stops the start with a line
naming its variable (`app.config_errors`), JSON settings naming the position. No error,
`repr` or `str` shows a secret (keys are `SecretStr`, URL credentials masked).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import NoDecode, SettingsConfigDict, SettingsError

from app.config_errors import EX_CONFIG, ConfigurationError, configuration_error, json_setting
from app.domain.models import ModelInfo
from app.limits.policy import LimitPolicy, Limits
from app.providers.catalog import default_models, parse_models
from app.settings_background import BackgroundSettings
from app.settings_budgets import BudgetSettings
from app.settings_checks import (
    EMPTY_MEANS_UNSET,
    FILE_CHECKS,
    TEXT_CHECKS,
    check_importable,
    production_problems,
    read_text,
)
from app.settings_identity import IdentitySettings
from app.settings_router import RouterSettings

Environment = Literal["development", "test", "production"]

# JSON settings: read as text and parsed by `_parse_json`, so a syntax error is a
# validation error naming the variable and its line and column, reported with the others.
JsonList = Annotated[list[str], NoDecode]
JsonMap = Annotated[dict[str, list[str]], NoDecode]

_JSON_SETTINGS = (
    "cors_origins",
    "tool_modules",
    "tool_allow",
    "tool_deny",
    "tool_model_allow",
    "tool_model_deny",
    "rate_limit_roles",
)
_URL_USERINFO = re.compile(r"://[^/@\s]*@")
_URL_SETTINGS = frozenset({"database_url", "redis_url", "openai_base_url", "anthropic_base_url"})


class Settings(IdentitySettings, BudgetSettings, BackgroundSettings, RouterSettings):
    model_config = SettingsConfigDict(
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        case_sensitive=False,
        hide_input_in_errors=True,
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
    redis_retry_seconds: float = Field(
        default=2.0,
        ge=0,
        le=300,
        description="After Redis did not answer (timeout, connection refused), calls skip it "
        "for this long (limit checks let requests through at once, the bus's readers use the "
        "database), then one call tries it again; 0 skips no call.",
    )
    cors_origins: JsonList = Field(default_factory=list, description="Allowed CORS origins.")
    max_body_bytes: int = Field(default=1_000_000, ge=1, description="Request body size cap.")
    request_headers_timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        le=3600,
        description="A connection whose request headers have not all arrived this long after "
        "it opened (or after the request's first byte, on a kept-alive connection) is closed, "
        "with 408 request_timeout if a request had begun (under the service's HTTP protocol).",
    )
    request_body_timeout_seconds: float = Field(
        default=60.0,
        gt=0,
        le=3600,
        description="A request body still arriving this long after its headers is refused "
        "(408 request_timeout, connection closed); bodies that carry files (uploads, chat "
        "bodies with inline files) get UPLOAD_TIMEOUT_SECONDS more.",
    )
    max_messages: int = Field(
        default=2048,
        ge=1,
        description="Most messages (or Responses input items) one request may carry: a longer "
        "history is a 400 before it is read (OpenAI's own cap on Chat Completions messages).",
    )
    max_content_parts: int = Field(
        default=8192,
        ge=1,
        description="Most content parts all the messages of one request may carry together: "
        "more is a 400 `content_parts_above_max` before any part is read.",
    )
    heartbeat_seconds: float = Field(default=15.0, gt=0, description="SSE heartbeat interval.")
    # --- files -------------------------------------------------------------------------
    files_dir: Path = Field(
        default=Path("./chat-bff-files"),
        description="Directory holding uploaded files (created on first upload); beside "
        "the default SQLite file.",
    )
    upload_max_bytes: int = Field(
        default=10 * 1024 * 1024,
        ge=1,
        le=1024 * 1024 * 1024,
        description="Largest file accepted, uploaded or inline as a data URL (413 past it).",
    )
    upload_quota_bytes: int = Field(
        default=1024 * 1024 * 1024,
        ge=1,
        description="All of one user's stored files together (uploads and data URLs); an "
        "upload that would pass it is refused with 413 upload_quota_exceeded. Deleting "
        "files (or purging the conversations that carry them) frees room.",
    )
    upload_timeout_seconds: float = Field(
        default=120.0,
        gt=0,
        le=3600,
        description="An upload still arriving after this long is refused (408).",
    )
    extract_timeout_seconds: float = Field(
        default=20.0,
        gt=0,
        le=600,
        description="Reading one document's text (PDF, XLSX, CSV, JSON) stops after this.",
    )
    files_sweep_grace_seconds: float = Field(
        default=3600.0,
        ge=600,
        le=30 * 24 * 3600,
        description="Stored bytes no file row names (an upload cut off between writing its "
        "bytes and recording its file) are removed once they are this old; more than an "
        "upload can take (UPLOAD_TIMEOUT_SECONDS + EXTRACT_TIMEOUT_SECONDS), so no file "
        "still being recorded loses its bytes.",
    )
    files_sweep_interval_seconds: float = Field(
        default=3600.0,
        ge=60,
        le=7 * 24 * 3600,
        description="How often such bytes are looked for (and once at start-up).",
    )
    extract_concurrency: int = Field(
        default=2,
        ge=1,
        le=64,
        description="Documents read at once per process (each in a worker thread).",
    )
    stream_send_timeout_seconds: float = Field(
        default=60.0,
        gt=0,
        description="An SSE reader whose socket takes nothing for this long is dropped "
        "(it can resume with Last-Event-ID), and its connection let go (any client that "
        "reads nothing of its answer, under the service's HTTP protocol).",
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
    provider_timeout_seconds: float = Field(
        default=60.0, gt=0, description="Upstream read timeout."
    )
    provider_connect_timeout_seconds: float = Field(
        default=10.0, gt=0, description="Connect timeout."
    )
    provider_max_connections: int = Field(
        default=1000,
        ge=1,
        description="Connections each provider opens to its upstream at most (a streaming "
        "answer holds one over HTTP/1.1); a request beyond them waits for a free one, up to "
        "the connect timeout. Raise it with the open streams one process serves.",
    )
    provider_max_retries: int = Field(
        default=2,
        ge=0,
        le=10,
        description="Retries before the first byte (429, 5xx, connection errors).",
    )
    failover_after_first_byte: bool = Field(
        default=False,
        description="Let a stream that fails after its first byte be answered again by a "
        "fallback, the partial attempt retracted (a catalogue entry's own setting wins).",
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
        default=20.0, ge=0, description="Pause between scripted chunks (realistic pacing)."
    )

    # --- agent -----------------------------------------------------------------------
    max_iterations: int = Field(default=8, ge=1, description="Model calls allowed in one run.")
    tool_timeout_seconds: float = Field(default=30.0, gt=0, description="Default per-tool timeout.")
    run_timeout_seconds: float = Field(default=600.0, gt=0, description="Wall-clock cap of a run.")
    run_lease_seconds: float = Field(
        default=15.0,
        gt=0,
        description="A run whose process has not renewed it for this long is closed as "
        "interrupted (the process died); its concurrent-run slot lapses as soon.",
    )
    idempotency_key_ttl_seconds: float = Field(
        default=86_400.0,
        gt=0,
        # 30 days: a retry comes within minutes; a longer life only keeps what was created
        # (past ~2.5e11 s the expiry cannot even be computed, every keyed create a 500).
        le=30 * 86_400,
        description="How long the outcome of a create sent with an Idempotency-Key is kept: "
        "a repeat within this time answers it again instead of creating anything "
        "(at most 30 days).",
    )

    # --- tools -----------------------------------------------------------------------
    tool_modules: JsonList = Field(
        default_factory=list,
        description="Importable modules exposing `register(registry)` (JSON list in env).",
    )
    tool_allow: Annotated[list[str] | None, NoDecode] = Field(
        default=None, description="Tool name patterns this deployment offers; all if unset."
    )
    tool_deny: JsonList = Field(
        default_factory=list, description="Tool name patterns never offered to any model."
    )
    tool_model_allow: JsonMap = Field(
        default_factory=dict, description="Per model id: the only tool patterns it may use."
    )
    tool_model_deny: JsonMap = Field(
        default_factory=dict, description="Per model id: tool patterns it may not use."
    )
    approval_ttl_seconds: float = Field(
        default=3600.0, gt=0, description="How long a pending tool approval stays decidable."
    )
    mcp_servers: SecretStr | None = Field(default=None, description="MCP servers (JSON, README).")
    confirmation_tool: str = Field(
        default="approval_request",
        description="The client tool `/api/chat` answers a pending approval as (AIKit GenUI).",
    )
    example_tools_enabled: bool | None = Field(
        default=None, description="The example knowledge-graph tools; on in development."
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
    rate_limit_open_streams: int = Field(
        default=256,
        ge=0,
        description="Event streams (GET: a run's events, a conversation's or the queue's feed, "
        "a resume) one caller may hold open at once on one process; 0 disables. The default "
        "leaves room for many tabs and stops one token from holding thousands.",
    )
    rate_limit_roles: Annotated[dict[str, dict[str, int]], NoDecode] = Field(
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

    def catalogue_models(self) -> list[ModelInfo]:
        """The catalogue's entries: MODELS_JSON, else MODELS_FILE, else one model per
        configured provider and the offline `scripted` one (the container builds the
        catalogue from them; validation has already checked them)."""
        if self.models_json:
            return parse_models(self.models_json)
        if self.models_file is not None:
            return parse_models(self.models_file.read_bytes())
        return default_models(
            openai=self.openai_api_key is not None or bool(self.openai_base_url),
            anthropic=self.anthropic_api_key is not None,
        )

    def __repr_args__(self) -> Iterable[tuple[str | None, Any]]:
        """Like pydantic's, with URL credentials masked (a password in DATABASE_URL)."""
        for name, value in super().__repr_args__():
            if name in _URL_SETTINGS and isinstance(value, str):
                value = _URL_USERINFO.sub("://***@", value)
            yield name, value

    # --- checks (each error message names no value; see app.config_errors) -------------

    @field_validator(*_JSON_SETTINGS, mode="before")
    @classmethod
    def _parse_json(cls, value: Any) -> Any:
        return json_setting(value) if isinstance(value, str) else value

    @field_validator("openai_api_key", "anthropic_api_key", mode="before")
    @classmethod
    def _key(cls, value: Any) -> Any:
        """A key read from a file (`$(cat key)`, a mounted secret) ends in a line break,
        which the HTTP client refuses to send: every model call failed as "could not be
        reached", with the key in the client's error at DEBUG."""
        if isinstance(value, SecretStr):
            value = value.get_secret_value()
        return value.strip() if isinstance(value, str) else value

    @field_validator(*TEXT_CHECKS)
    @classmethod
    def _text(cls, value: Any, info: ValidationInfo) -> Any:
        name, text = info.field_name or "", getattr(value, "get_secret_value", lambda: value)()
        if text is not None and (text or name not in EMPTY_MEANS_UNSET):
            TEXT_CHECKS[name](text)
        return value

    @field_validator(*FILE_CHECKS)
    @classmethod
    def _file(cls, value: Path | None, info: ValidationInfo) -> Path | None:
        if value is not None:
            FILE_CHECKS[info.field_name or ""](read_text(value))
        return value

    @field_validator("tool_modules")
    @classmethod
    def _importable(cls, value: list[str]) -> list[str]:
        check_importable(value)
        return value

    @field_validator("rate_limit_roles")
    @classmethod
    def _known_limits(cls, value: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
        LimitPolicy(Limits(), value)  # raises ValueError naming the role and limit
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Settings:
        """Checks across settings, all reported at once (one line each, variable first)."""
        problems = (
            production_problems(
                self.auth_configured,
                {
                    "JWT_SECRET": self.jwt_secret,
                    "STREAM_TOKEN_SECRET": self.stream_token_secret,
                    "FORWARD_TOKEN_SECRET": self.forward_token_secret,
                },
            )
            if self.environment == "production"
            else []
        )
        models = self.catalogue_models()
        if self.default_model is not None:
            ids = [m.id for m in models]
            if self.default_model not in ids:
                problems.append(
                    f"DEFAULT_MODEL: not in the model catalogue (its ids: {', '.join(ids)})"
                )
        upload = self.upload_timeout_seconds + self.extract_timeout_seconds
        if self.files_sweep_grace_seconds <= upload:
            problems.append(
                "FILES_SWEEP_GRACE_SECONDS: must exceed UPLOAD_TIMEOUT_SECONDS + "
                f"EXTRACT_TIMEOUT_SECONDS ({upload:g} s), or an upload's bytes could be "
                "removed while its file is being recorded"
            )
        claude = [m.id for m in models if m.provider == "anthropic"]
        if claude and self.anthropic_api_key is None:
            problems.append(
                f"ANTHROPIC_API_KEY: unset, but the catalogue names Anthropic models "
                f"({', '.join(claude)})"
            )
        if problems:
            raise ValueError("\n".join(problems))
        return self


def get_settings() -> Settings:
    """Build settings from the environment; call it at start-up, never at import time.

    Raises `ConfigurationError`, whose lines name each bad variable and no value.
    """
    try:
        return Settings()
    except (ValidationError, SettingsError) as exc:
        raise configuration_error(exc) from None


def settings_or_exit() -> Settings:
    """`get_settings()` for entry points (the app under uvicorn, the CLI): a configuration
    error prints one `configuration error: VARIABLE: problem` line per problem on stderr
    and exits with status 78 (EX_CONFIG), with no traceback."""
    try:
        return get_settings()
    except ConfigurationError as exc:
        for line in exc.problems:
            print(f"configuration error: {line}", file=sys.stderr, flush=True)
        raise SystemExit(EX_CONFIG) from None
