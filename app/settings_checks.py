"""What the settings check inside a value: a file that must be readable, the model
catalogue's JSON, a PEM public key, a JWKS file's shape, database and Redis URLs, a log
level, a secret too weak for production.

Each check raises `ValueError` with a message that describes the problem and never quotes
the value (the settings' validators turn it into `VARIABLE: problem`, see
`app.config_errors`); a message of several lines is several problems.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import SecretStr, ValidationError
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

from app.config_errors import json_setting
from app.mcp.config import parse_servers
from app.providers.catalog import parse_models


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError("no such file") from None
    except IsADirectoryError:
        raise ValueError("is a directory, not a file") from None
    except PermissionError:
        raise ValueError("cannot be read (permission denied)") from None
    except UnicodeDecodeError:
        raise ValueError("is not UTF-8 text") from None
    except OSError as exc:
        raise ValueError(f"cannot be read ({type(exc).__name__})") from None


def check_catalogue(text: str) -> None:
    """The catalogue's JSON, checked entry by entry; one line per problem."""
    json_setting(text)
    try:
        models = parse_models(text)
    except ValidationError as exc:
        raise ValueError("\n".join(_entry_problems(exc))) from None
    if not models:
        raise ValueError("the catalogue is empty: list at least one model")
    seen: set[str] = set()
    for index, model in enumerate(models):
        if model.id in seen:
            raise ValueError(f"entry {index}, id: repeats the id of an earlier entry")
        seen.add(model.id)
    for index, model in enumerate(models):
        for fallback in model.fallbacks:
            if fallback not in seen or fallback == model.id:
                raise ValueError(
                    f"entry {index}, fallbacks: each must be the id of another catalogue entry"
                )


def _entry_problems(exc: ValidationError) -> list[str]:
    """`entry 0, provider: Input should be ...`: where in the list, then what is wrong."""
    lines: list[str] = []
    for error in exc.errors(include_input=False):
        if not error["loc"]:
            lines.append(f"{error['msg']} (a JSON list of models)")
            continue
        index, *rest = error["loc"]
        fields = "".join(f", {part}" for part in rest)
        lines.append(f"entry {index}{fields}: {error['msg']}")
    return lines


def check_mcp_servers(text: str) -> None:
    """MCP_SERVERS, checked server by server (`entry 0, url: ...`); no value is quoted."""
    json_setting(text)
    try:
        parse_servers(text)
    except ValidationError as exc:
        lines = (line.replace("Value error, ", "") for line in _entry_problems(exc))
        raise ValueError("\n".join(lines)) from None


def check_public_key(pem: str) -> None:
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    try:
        load_pem_public_key(pem.encode())
    except (ValueError, TypeError):
        raise ValueError("not a PEM public key (RSA or EC)") from None


def check_jwks(text: str) -> None:
    data = json_setting(text)
    if not isinstance(data, dict) or not isinstance(data.get("keys"), list):
        raise ValueError('should hold a JSON object with a "keys" list')


_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def check_log_level(text: str) -> None:
    if text.upper() not in _LOG_LEVELS:
        raise ValueError(f"should be one of {', '.join(_LOG_LEVELS)}")


def check_database_url(text: str) -> None:
    """An SQLAlchemy URL with an async driver (the engine is async)."""
    try:
        dialect = make_url(text).get_dialect()
    except (ArgumentError, NoSuchModuleError, ValueError):
        raise ValueError(
            "not a database URL this service can use "
            "(sqlite+aiosqlite:///path or postgresql+asyncpg://user@host/db)"
        ) from None
    if not dialect.is_async:
        raise ValueError("needs an async driver: sqlite+aiosqlite:// or postgresql+asyncpg://")


def check_redis_url(text: str) -> None:
    if not text.startswith(("redis://", "rediss://", "unix://")):
        raise ValueError("should start with redis://, rediss:// or unix://")


_DEFAULT_SECRETS = frozenset(
    {"changeme", "change-me", "change_me", "secret", "password", "jwt-secret", "dev", "test"}
)


def weak_secret(secret: str) -> bool:
    """Short, a well-known default, or made of few distinct characters."""
    lowered = secret.lower()
    return (
        len(secret) < 32
        or lowered in _DEFAULT_SECRETS
        or any(lowered.startswith(d) for d in ("change-me", "changeme", "replace-me"))
        or len(set(secret)) < 10
    )


def check_importable(names: Sequence[str]) -> None:
    """Each name finds a module (its parent packages are imported to look; the module
    itself is imported later, when the tools are registered)."""
    problems = []
    for index, name in enumerate(names):
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            problems.append(f"entry {index}: no module of that name can be imported")
    if problems:
        raise ValueError("\n".join(problems))


def production_problems(auth_configured: bool, secrets: dict[str, SecretStr | None]) -> list[str]:
    """What production refuses: no authentication, or a signing secret (by variable name)
    too weak to sign with."""
    if not auth_configured:
        return [
            "JWT_SECRET: production needs authentication: set JWT_SECRET, JWT_PUBLIC_KEY, "
            "JWT_PUBLIC_KEY_FILE or JWT_JWKS_FILE"
        ]
    return [
        f"{name}: too weak for production (32+ random characters)"
        for name, secret in secrets.items()
        if secret is not None and weak_secret(secret.get_secret_value())
    ]


# Checks of a setting's content, by field: text settings, then files (which must be
# readable UTF-8 first).
TEXT_CHECKS: dict[str, Callable[[str], None]] = {
    "log_level": check_log_level,
    "database_url": check_database_url,
    "redis_url": check_redis_url,
    "models_json": check_catalogue,
    "jwt_public_key": check_public_key,
    "mcp_servers": check_mcp_servers,
}
EMPTY_MEANS_UNSET = frozenset({"redis_url", "models_json", "jwt_public_key", "mcp_servers"})
FILE_CHECKS: dict[str, Callable[[str], None]] = {
    "models_file": check_catalogue,
    "scripted_script": lambda text: None,
    "jwt_jwks_file": check_jwks,
    "jwt_public_key_file": check_public_key,
}
