"""Structured JSON logs with request and run context, and a last-line redaction filter.

Context travels in contextvars (`request_id`, `run_id`, `user_id`), set by the request
middleware, the authenticator and the run manager (`bind_run(run_id)`), so any log line
written while handling a request or a run carries them without being passed around.

`RedactionFilter` is the last line of defence, not the first: provider SDK errors are
mapped before they reach a log line. It still scrubs anything key-shaped (provider keys,
our API keys, bearer tokens, JWTs, `secret=...` pairs: the shapes of
`app.domain.redaction`, the same list the providers scrub upstream text with) and any
configured secret value from the message, the extra fields and the exception text.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from app.domain.redaction import REDACTED, is_secret_name, redact, redact_value

request_id_var: ContextVar[str | None] = ContextVar("request_id", default=None)
run_id_var: ContextVar[str | None] = ContextVar("run_id", default=None)
user_id_var: ContextVar[str | None] = ContextVar("user_id", default=None)

# Attributes every LogRecord has; anything else came in through `extra=`.
_STANDARD_ATTRS = frozenset(
    vars(logging.LogRecord("x", logging.INFO, "x", 0, "x", None, None)).keys()
) | {"message", "asctime", "taskName"}


class RedactionFilter(logging.Filter):
    """Scrubs key-shaped text and the configured secret values from every record."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self._secrets = tuple(secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        record.msg = redact(message, self._secrets)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text, self._secrets)
        record.exc_info = None
        for key, value in list(vars(record).items()):
            if key in _STANDARD_ATTRS:
                continue
            if is_secret_name(key):
                setattr(record, key, REDACTED)
            else:
                setattr(record, key, redact_value(value, self._secrets))
        return True


def extra_fields(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in vars(record).items() if k not in _STANDARD_ATTRS}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, context, extra fields."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name, var in (("request_id", request_id_var), ("run_id", run_id_var)):
            value = getattr(record, name, None) or var.get()
            if value:
                entry[name] = value
        user_id = user_id_var.get()
        if user_id:
            entry["user_id"] = user_id
        for key, value in extra_fields(record).items():
            entry.setdefault(key, value)
        if record.exc_text:
            entry["exception"] = record.exc_text
        elif record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        if not hasattr(record, "request_id"):
            record.request_id = request_id_var.get() or "-"
        return super().format(record)


_HANDLER_MARK = "_chat_bff_handler"


def configure_logging(
    *, level: str = "INFO", json_lines: bool = True, secrets: Iterable[str] = ()
) -> logging.Handler:
    """Install the service's handler on the root logger (replacing a previous one).

    Called at start-up with values read from settings; calling it again (tests build many
    apps) swaps the handler instead of stacking a second one.
    """
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, _HANDLER_MARK, False):
            root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    setattr(handler, _HANDLER_MARK, True)
    handler.setFormatter(JsonFormatter() if json_lines else TextFormatter())
    handler.addFilter(RedactionFilter(secrets))
    handler.setLevel(level.upper())
    root.addHandler(handler)
    # Lower the root level if needed, never raise it: a test harness capturing DEBUG keeps it.
    root.setLevel(min(root.getEffectiveLevel(), handler.level))
    # Library loggers that would repeat our access line or print request URLs.
    logging.getLogger("uvicorn.access").setLevel(logging.WARNING)
    # Both HTTP clients note every request's full URL at INFO: an MCP server's URL often
    # holds its key (path or query), a provider's base URL may too (MCP_SERVERS and the
    # keys are secret settings). The providers and the MCP SDK use httpx2.
    for name in ("httpx", "httpx2"):
        logging.getLogger(name).setLevel(logging.WARNING)
    # The MCP SDK notes every session id and stream reconnect at INFO.
    logging.getLogger("mcp").setLevel(logging.WARNING)
    return handler


@contextmanager
def bind_run(run_id: str) -> Iterator[None]:
    """Tag every log line written inside the block (and tasks started in it) with a run id."""
    token = run_id_var.set(run_id)
    try:
        yield
    finally:
        run_id_var.reset(token)
