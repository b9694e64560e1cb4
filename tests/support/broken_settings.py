"""Every configuration error we know of, with canaries planted in every secret setting and
in the bad values themselves, for the tests that assert no canary reaches any output.

    SECRETS              the secret settings, each a unique canary (URLs carry theirs as
                         the password)
    cases(tmp_path)      [(case id, environment, the variable its error must name)]: apply
                         the environment on top of SECRETS (a None value unsets a secret)
    ALL_CANARIES         what must never be seen
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from app.settings import Settings
from tests.canary import canary

OPENAI_KEY = canary("sk-proj-")
ANTHROPIC_KEY = canary("sk-ant-api03-")
JWT_SECRET = canary("jwt-")
STREAM_SECRET = canary("stream-")
DATABASE_PASSWORD = canary("dbpw-")
REDIS_PASSWORD = canary("redispw-")
PROXY_PASSWORD = canary("proxypw-")
WEAK_JWT_SECRET = canary("changeme-")  # weak by its prefix, unique all the same
WEAK_STREAM_SECRET = canary("changeme-")
VALUE = canary("value-")  # planted in bad values: an error must not quote those either

SECRETS: dict[str, str] = {
    "OPENAI_API_KEY": OPENAI_KEY,
    "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
    "JWT_SECRET": JWT_SECRET,
    "STREAM_TOKEN_SECRET": STREAM_SECRET,
    "OPENAI_BASE_URL": f"https://proxy-user:{PROXY_PASSWORD}@127.0.0.1:9/v1",
    "REDIS_URL": f"redis://:{REDIS_PASSWORD}@127.0.0.1:6379/0",
}
ALL_CANARIES = [
    *(v for v in (OPENAI_KEY, ANTHROPIC_KEY, JWT_SECRET, STREAM_SECRET)),
    DATABASE_PASSWORD,
    REDIS_PASSWORD,
    PROXY_PASSWORD,
    WEAK_JWT_SECRET,
    WEAK_STREAM_SECRET,
    VALUE,
]

JSON_SETTINGS = [
    "CORS_ORIGINS",
    "TOOL_MODULES",
    "TOOL_ALLOW",
    "TOOL_DENY",
    "TOOL_MODEL_ALLOW",
    "TOOL_MODEL_DENY",
    "RATE_LIMIT_ROLES",
]


def numbers_out_of_range() -> dict[str, str]:
    """NAME -> a value just below its declared lower bound, for every number setting."""
    found: dict[str, str] = {}
    for name, info in Settings.model_fields.items():
        for bound in info.metadata:  # pydantic keeps `ge=` / `gt=` as Ge / Gt objects
            if (ge := getattr(bound, "ge", None)) is not None:
                found[name.upper()] = str(ge - 1)
            elif (gt := getattr(bound, "gt", None)) is not None:
                found[name.upper()] = str(gt)
    return found


Case = tuple[str, dict[str, str | None], str]


def cases(tmp_path: Path) -> list[Case]:
    """Each known configuration error once; files it needs are written under tmp_path."""
    leaky_file = tmp_path / "leaky.json"
    leaky_file.write_text(f"not json {VALUE}")
    entry = {"id": "m", "provider": VALUE, "upstream_model": "x", "api_key": OPENAI_KEY}
    broken_header = {
        "name": "hosted",
        "transport": "streamable-http",
        "url": "http://127.0.0.1:9/mcp",
        "headers": {"X-Api-Key": f"{VALUE}\r\nX-Injected: 1"},
    }
    found: list[Case] = [
        ("production-no-auth", {"ENVIRONMENT": "production", "JWT_SECRET": None}, "JWT_SECRET"),
        (
            "production-weak-jwt",
            {"ENVIRONMENT": "production", "JWT_SECRET": WEAK_JWT_SECRET},
            "JWT_SECRET",
        ),
        (
            "production-weak-stream",
            {"ENVIRONMENT": "production", "STREAM_TOKEN_SECRET": WEAK_STREAM_SECRET},
            "STREAM_TOKEN_SECRET",
        ),
        ("models-json-syntax", {"MODELS_JSON": f"[{VALUE}"}, "MODELS_JSON"),
        ("models-json-entry", {"MODELS_JSON": json.dumps([entry])}, "MODELS_JSON"),
        ("models-json-empty", {"MODELS_JSON": "[]"}, "MODELS_JSON"),
        ("models-file-missing", {"MODELS_FILE": str(tmp_path / VALUE)}, "MODELS_FILE"),
        ("models-file-content", {"MODELS_FILE": str(leaky_file)}, "MODELS_FILE"),
        ("default-model", {"DEFAULT_MODEL": VALUE}, "DEFAULT_MODEL"),
        ("environment", {"ENVIRONMENT": VALUE}, "ENVIRONMENT"),
        ("log-level", {"LOG_LEVEL": VALUE}, "LOG_LEVEL"),
        ("log-json", {"LOG_JSON": VALUE}, "LOG_JSON"),
        ("number-text", {"MAX_ITERATIONS": VALUE}, "MAX_ITERATIONS"),
        (
            "database-sync-driver",
            {"DATABASE_URL": f"postgresql://chat:{DATABASE_PASSWORD}@127.0.0.1/chat"},
            "DATABASE_URL",
        ),
        ("database-garbage", {"DATABASE_URL": f"{VALUE}:{DATABASE_PASSWORD}"}, "DATABASE_URL"),
        ("redis-scheme", {"REDIS_URL": f"http://:{REDIS_PASSWORD}@127.0.0.1:6379"}, "REDIS_URL"),
        ("public-key", {"JWT_PUBLIC_KEY": VALUE}, "JWT_PUBLIC_KEY"),
        ("public-key-file", {"JWT_PUBLIC_KEY_FILE": str(leaky_file)}, "JWT_PUBLIC_KEY_FILE"),
        ("jwks-file", {"JWT_JWKS_FILE": str(leaky_file)}, "JWT_JWKS_FILE"),
        ("scripted-script", {"SCRIPTED_SCRIPT": str(tmp_path / VALUE)}, "SCRIPTED_SCRIPT"),
        ("tool-modules", {"TOOL_MODULES": json.dumps([VALUE])}, "TOOL_MODULES"),
        (
            "role-limits",
            {"RATE_LIMIT_ROLES": json.dumps({"admin": {"requests_per_hour": 1}})},
            "RATE_LIMIT_ROLES",
        ),
        ("list-item-type", {"CORS_ORIGINS": "[1]"}, "CORS_ORIGINS"),
        ("mcp-header-control", {"MCP_SERVERS": json.dumps([broken_header])}, "MCP_SERVERS"),
    ]
    found += [(f"json-{n.lower()}", {n: f'["a", {VALUE}]'}, n) for n in JSON_SETTINGS]
    found += [(f"range-{n.lower()}", {n: v}, n) for n, v in numbers_out_of_range().items()]
    return found


def environment(overrides: Mapping[str, str | None]) -> dict[str, str]:
    """SECRETS with a case's settings on top."""
    env: dict[str, str | None] = {**SECRETS, **overrides}
    return {k: v for k, v in env.items() if v is not None}


def all_field_errors(tmp_path: Path) -> dict[str, str]:
    """Every case that is a problem of one setting, at once (cross-setting checks such as
    production's only run once every setting is valid)."""
    merged: dict[str, str] = {}
    for name, env, _ in cases(tmp_path):
        if not name.startswith("production") and name != "default-model":
            merged.update({k: v for k, v in env.items() if v is not None})
    return merged
