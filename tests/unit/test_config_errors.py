"""A bad setting is reported as one line per problem, naming the environment variable and
never its value; what can be checked before start-up is checked when settings are read."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import SecretStr, ValidationError

from app.config_errors import EX_CONFIG, ConfigurationError
from app.settings import Settings, get_settings, settings_or_exit
from tests.auth.tokens import rsa_keys
from tests.support.broken_settings import JSON_SETTINGS, numbers_out_of_range

Problems = Callable[..., list[str]]

ENTRY = {"id": "llama", "provider": "openai", "upstream_model": "llama3.1:8b"}


@pytest.fixture
def problems(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Problems:
    """`problems(NAME=value, ...)`: the lines `get_settings()` reports with exactly these
    variables set (no `.env`, nothing inherited, nothing from an earlier call)."""
    monkeypatch.chdir(tmp_path)
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
        monkeypatch.delenv(name, raising=False)

    earlier: list[str] = []

    def read(**env: str) -> list[str]:
        for name in earlier:  # each call stands alone
            monkeypatch.delenv(name)
        earlier[:] = env
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        with pytest.raises(ConfigurationError) as info:
            get_settings()
        return info.value.problems

    return read


def test_not_json_names_the_variable_and_where_it_broke(problems: Problems) -> None:
    assert problems(MODELS_JSON="not json") == ["MODELS_JSON: not valid JSON (line 1 column 1)"]


@pytest.mark.parametrize("name", JSON_SETTINGS)
def test_every_json_setting_that_is_not_json_is_named(problems: Problems, name: str) -> None:
    assert problems(**{name: '["a", oops]'}) == [f"{name}: not valid JSON (line 1 column 7)"]


def test_several_problems_are_several_lines(problems: Problems) -> None:
    lines = problems(CORS_ORIGINS="[", HEARTBEAT_SECONDS="0", LOG_LEVEL="loud")
    assert sorted(lines) == [
        "CORS_ORIGINS: not valid JSON (line 1 column 2)",
        "HEARTBEAT_SECONDS: Input should be greater than 0",
        "LOG_LEVEL: should be one of DEBUG, INFO, WARNING, ERROR, CRITICAL",
    ]


def test_an_item_of_the_wrong_type_is_named_with_its_position(problems: Problems) -> None:
    assert problems(CORS_ORIGINS='["https://a.example", 7]') == [
        "CORS_ORIGINS[1]: Input should be a valid string"
    ]


def test_each_bad_catalogue_entry_is_one_line(problems: Problems) -> None:
    entries = [{**ENTRY, "provider": "nope"}, {"id": "x", "provider": "openai"}]
    assert problems(MODELS_JSON=json.dumps(entries)) == [
        "MODELS_JSON: entry 0, provider: Input should be 'openai', 'anthropic' or 'scripted'",
        "MODELS_JSON: entry 1, upstream_model: Field required",
    ]


@pytest.mark.parametrize(
    ("models", "line"),
    [
        ({"models": []}, "MODELS_JSON: Input should be a valid array (a JSON list of models)"),
        ([], "MODELS_JSON: the catalogue is empty: list at least one model"),
        ([ENTRY, ENTRY], "MODELS_JSON: entry 1, id: repeats the id of an earlier entry"),
        (
            [{**ENTRY, "fallbacks": ["nowhere"]}],
            "MODELS_JSON: entry 0, fallbacks: each must be the id of another catalogue entry",
        ),
        (
            [{**ENTRY, "fallbacks": ["llama"]}],
            "MODELS_JSON: entry 0, fallbacks: each must be the id of another catalogue entry",
        ),
    ],
)
def test_a_catalogue_must_list_distinct_models(
    problems: Problems, models: object, line: str
) -> None:
    assert problems(MODELS_JSON=json.dumps(models)) == [line]


def test_a_models_file_is_read_and_checked(problems: Problems, tmp_path: Path) -> None:
    broken = tmp_path / "models.json"
    broken.write_text("[{")
    assert problems(MODELS_FILE=str(tmp_path / "missing.json")) == ["MODELS_FILE: no such file"]
    assert problems(MODELS_FILE=str(broken)) == ["MODELS_FILE: not valid JSON (line 1 column 3)"]
    assert problems(MODELS_FILE=str(tmp_path)) == ["MODELS_FILE: is a directory, not a file"]


def test_the_default_model_must_be_in_the_catalogue(problems: Problems) -> None:
    assert problems(DEFAULT_MODEL="gpt-4o-mini") == [
        "DEFAULT_MODEL: not in the model catalogue (its ids: scripted)"
    ]
    assert problems(MODELS_JSON=json.dumps([ENTRY]), DEFAULT_MODEL="gpt-5") == [
        "DEFAULT_MODEL: not in the model catalogue (its ids: llama)"
    ]


def test_an_anthropic_model_without_its_key_is_a_configuration_error(
    problems: Problems,
) -> None:
    """Not a traceback from the app's start-up: the entry points exit 78 with this line."""
    claude = {"id": "claude", "provider": "anthropic", "upstream_model": "claude-haiku-4-5"}
    assert problems(MODELS_JSON=json.dumps([ENTRY, claude])) == [
        "ANTHROPIC_API_KEY: unset, but the catalogue names Anthropic models (claude)"
    ]


def test_a_default_model_of_the_catalogue_is_accepted(
    problems: Problems, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("DEFAULT_MODEL", "gpt-4o-mini")
    assert [m.id for m in get_settings().catalogue_models()] == ["gpt-4o-mini", "scripted"]


def test_every_number_setting_declares_its_range() -> None:
    numbers = [n.upper() for n, f in Settings.model_fields.items() if f.annotation in (int, float)]
    assert sorted(numbers) == sorted(numbers_out_of_range())


@pytest.mark.parametrize(("name", "value"), numbers_out_of_range().items())
def test_a_number_out_of_range_is_named(problems: Problems, name: str, value: str) -> None:
    [line] = problems(**{name: value})
    assert line.startswith(f"{name}: Input should be greater than")


def test_an_idempotency_key_lifetime_past_30_days_is_refused_at_start(
    problems: Problems,
) -> None:
    # Far past it, the keys' expiry could not be computed: every keyed create was a 500.
    assert problems(IDEMPOTENCY_KEY_TTL_SECONDS="1e12") == [
        "IDEMPOTENCY_KEY_TTL_SECONDS: Input should be less than or equal to 2592000"
    ]


def test_a_sweep_grace_an_upload_could_outlast_is_refused_at_start(problems: Problems) -> None:
    # Bytes of an upload still being recorded would be removed as stray.
    assert problems(FILES_SWEEP_GRACE_SECONDS="900", UPLOAD_TIMEOUT_SECONDS="900") == [
        "FILES_SWEEP_GRACE_SECONDS: must exceed UPLOAD_TIMEOUT_SECONDS + "
        "EXTRACT_TIMEOUT_SECONDS (920 s), or an upload's bytes could be removed while its "
        "file is being recorded"
    ]


def test_a_number_that_is_not_a_number_is_named(problems: Problems) -> None:
    assert problems(MAX_ITERATIONS="many") == [
        "MAX_ITERATIONS: Input should be a valid integer, unable to parse string as an integer"
    ]


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("postgresql://chat:pw@db/chat", "needs an async driver"),
        ("not a url", "not a database URL this service can use"),
        ("nosuchdb+driver://x/y", "not a database URL this service can use"),
    ],
)
def test_a_database_url_the_engine_cannot_use_is_refused(
    problems: Problems, url: str, problem: str
) -> None:
    [line] = problems(DATABASE_URL=url)
    assert line.startswith(f"DATABASE_URL: {problem}")


def test_a_redis_url_must_be_a_redis_url(problems: Problems) -> None:
    assert problems(REDIS_URL="http://127.0.0.1:6379") == [
        "REDIS_URL: should start with redis://, rediss:// or unix://"
    ]


def test_tool_modules_must_be_importable(problems: Problems) -> None:
    assert problems(TOOL_MODULES='["json", "no_such_module_here"]') == [
        "TOOL_MODULES: entry 1: no module of that name can be imported"
    ]


def test_limits_per_role_must_be_known_limits(problems: Problems) -> None:
    [line] = problems(RATE_LIMIT_ROLES='{"admin": {"requests_per_hour": 5}}')
    assert line.startswith("RATE_LIMIT_ROLES: unknown limit(s)")


def test_key_files_are_read_and_checked(problems: Problems, tmp_path: Path) -> None:
    jwks, pem = tmp_path / "jwks.json", tmp_path / "key.pem"
    jwks.write_text('{"no_keys": []}')
    pem.write_text("-----BEGIN PUBLIC KEY-----\nnot base64\n-----END PUBLIC KEY-----\n")
    assert problems(JWT_JWKS_FILE=str(jwks)) == [
        'JWT_JWKS_FILE: should hold a JSON object with a "keys" list'
    ]
    assert problems(JWT_PUBLIC_KEY_FILE=str(pem)) == [
        "JWT_PUBLIC_KEY_FILE: not a PEM public key (RSA or EC)"
    ]
    assert problems(JWT_PUBLIC_KEY="ssh-rsa AAAA") == [
        "JWT_PUBLIC_KEY: not a PEM public key (RSA or EC)"
    ]


def test_a_valid_public_key_file_is_accepted(tmp_path: Path) -> None:
    pem = tmp_path / "key.pem"
    pem.write_text(rsa_keys().public_pem)
    assert Settings(_env_file=None, jwt_public_key_file=pem).auth_configured


def test_production_without_authentication_names_what_to_set(problems: Problems) -> None:
    assert problems(ENVIRONMENT="production", OPENAI_API_KEY="sk-not-shown") == [
        "JWT_SECRET: production needs authentication: set JWT_SECRET, JWT_PUBLIC_KEY, "
        "JWT_PUBLIC_KEY_FILE or JWT_JWKS_FILE"
    ]


def test_weak_secrets_in_production_are_each_named(problems: Problems) -> None:
    lines = problems(ENVIRONMENT="production", JWT_SECRET="changeme", STREAM_TOKEN_SECRET="x")
    assert lines == [
        "JWT_SECRET: too weak for production (32+ random characters)",
        "STREAM_TOKEN_SECRET: too weak for production (32+ random characters)",
    ]


def test_an_entry_point_prints_the_lines_and_exits_78(
    problems: Problems, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MODELS_JSON", "{")
    monkeypatch.setenv("HEARTBEAT_SECONDS", "-1")
    with pytest.raises(SystemExit) as info:
        settings_or_exit()
    captured = capsys.readouterr()
    assert info.value.code == EX_CONFIG
    assert captured.out == ""
    assert sorted(captured.err.splitlines()) == [
        "configuration error: HEARTBEAT_SECONDS: Input should be greater than 0",
        "configuration error: MODELS_JSON: not valid JSON (line 1 column 2)",
    ]


def test_the_settings_repr_masks_keys_and_url_credentials() -> None:
    settings = Settings(
        _env_file=None,
        openai_api_key=SecretStr("sk-proj-visible-key"),
        database_url="postgresql+asyncpg://chat:db-password@db:5432/chat",
        redis_url="redis://:redis-password@cache:6379/0",
        openai_base_url="https://user:proxy-password@proxy.example/v1",
    )
    for text in (repr(settings), str(settings)):
        for secret in ("sk-proj-visible-key", "db-password", "redis-password", "proxy-password"):
            assert secret not in text
        assert "postgresql+asyncpg://***@db:5432/chat" in text


def test_a_settings_validation_error_does_not_quote_its_input() -> None:
    with pytest.raises(ValidationError) as info:
        Settings(
            _env_file=None,
            environment="production",
            openai_api_key=SecretStr("sk-proj-visible-key"),
            heartbeat_seconds=-5,
        )
    for text in (str(info.value), repr(info.value)):
        assert "sk-proj-visible-key" not in text
        assert "-5" not in text
