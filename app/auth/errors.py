"""The one authentication failure.

Every cause (no credentials, expired, wrong audience, bad signature, revoked key, ...)
answers the same 401 body, so a caller cannot tell which check failed; the cause goes to
the log at INFO instead (never the credential itself).
"""

from __future__ import annotations

from app.domain.errors import ChatBffError

UNAUTHORIZED_MESSAGE = "Missing or invalid credentials."


class Unauthorized(ChatBffError):
    status = 401
    code = "unauthorized"

    def __init__(self, reason: str) -> None:
        super().__init__(UNAUTHORIZED_MESSAGE)
        self.reason = reason
