"""Configuration errors as an operator should read them: one line per problem, naming the
environment variable, never its value.

    MODELS_JSON: not valid JSON (line 1 column 1)
    MODELS_JSON[0].provider: Input should be 'openai', 'anthropic' or 'scripted'
    HEARTBEAT_SECONDS: Input should be greater than 0
    JWT_SECRET: production needs authentication: set JWT_SECRET, ...

Why not pydantic's own report: it is thirty lines of traceback, and it quotes the input,
which for a model-level check is every setting at once, provider keys and the JWT secret
included (in a container, straight into `docker logs`). The lines here are built from the
error's location and message only; pydantic's messages describe the expected value, never
the one given. Validators that find a problem in a setting's content (a catalogue entry,
a file) raise `ValueError`s whose text follows the same rule, one problem per line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError
from pydantic_settings import SettingsError

EX_CONFIG = 78  # sysexits.h: "configuration error"

_VALUE_ERROR_PREFIX = "Value error, "
_SOURCE_FIELD = re.compile(r'field "(?P<field>[A-Za-z0-9_]+)"')


class ConfigurationError(Exception):
    """The settings cannot be used; `problems` holds one line per problem, value-free."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems) or ["the settings could not be read"]
        super().__init__("\n".join(self.problems))


def json_setting(text: str) -> Any:
    """A setting's JSON text, parsed; the error says where the syntax broke, not what."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON (line {exc.lineno} column {exc.colno})") from None


def _path(loc: Iterable[int | str]) -> str:
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc)


def error_lines(errors: Iterable[Mapping[str, Any]], name: str = "") -> list[str]:
    """`name` + location + message for each error; no input, no context values.

    Without `name` the first location element is a settings field, shown as its
    environment variable. A message of several lines is several problems.
    """
    lines: list[str] = []
    for error in errors:
        loc = list(error["loc"])
        head = name
        if not head and loc:
            head = str(loc.pop(0)).upper()
        where = head + _path(loc)
        message = error["msg"].removeprefix(_VALUE_ERROR_PREFIX)
        for line in message.splitlines() or [""]:
            lines.append(f"{where}: {line}" if where else line)
    return lines


def configuration_error(exc: ValidationError | SettingsError) -> ConfigurationError:
    """The operator's view of a failure to build the settings."""
    if isinstance(exc, ValidationError):
        return ConfigurationError(error_lines(exc.errors(include_input=False)))
    # A source could not decode a value (a JSON setting declared without our own
    # parsing): its message names the field; its cause may quote the value, so only the
    # field name is kept.
    match = _SOURCE_FIELD.search(str(exc))
    if match is None:
        return ConfigurationError(["the settings could not be read from the environment"])
    return ConfigurationError([f"{match['field'].upper()}: not valid JSON"])
