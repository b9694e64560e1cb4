"""DTOs of the identity, admin and stream-token endpoints."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from app.domain.identity import AuthMethod

# Segments under /api/, at least two, none of them `.` or `..`; no query, fragment, space
# or control character (spelled out: `\s` differs between Python and ECMA regexes).
STREAM_PATH_PATTERN = r"^/api(/(?!\.\.?(/|$))[^/?#\x00-\x20\x7f]+){2,}/?$"
RoleName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.:-]{1,64}$")]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MeOut(BaseModel):
    """The identity the service resolved, to debug authentication."""

    user_id: str = Field(description="Your caller id (the JWT subject or the key's owner).")
    roles: list[str] = Field(description="Your roles.")
    method: AuthMethod = Field(description="How this request was authenticated.")


class StreamTokenRequest(_Request):
    """Exactly one of `path` or `run_id`."""

    # The path pattern needs a lookahead, which pydantic's default regex engine lacks.
    model_config = ConfigDict(
        extra="forbid",
        regex_engine="python-re",
        json_schema_extra={
            "oneOf": [
                {
                    "required": ["path"],
                    "properties": {"path": {"type": "string"}, "run_id": {"type": "null"}},
                },
                {
                    "required": ["run_id"],
                    "properties": {"run_id": {"type": "string"}, "path": {"type": "null"}},
                },
            ]
        },
    )

    path: str | None = Field(
        default=None,
        description="Path prefix the token is good for, e.g. `/api/conversations/{id}`: at "
        "least two segments under `/api/`, no query, no dot segments.",
        max_length=512,
        pattern=STREAM_PATH_PATTERN,
    )
    run_id: str | None = Field(
        default=None,
        description="Or: the run whose event streams the token opens.",
        min_length=1,
        max_length=128,
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> StreamTokenRequest:
        if (self.path is None) == (self.run_id is None):
            raise ValueError("give exactly one of `path` or `run_id`")
        return self


class StreamTokenOut(BaseModel):
    """A short-lived token for EventSource, which cannot send headers."""

    token: str = Field(description="Pass as `?token=` on the EventSource URL.")
    expires_at: datetime = Field(description="When the token stops working.")


class ApiKeyCreate(_Request):
    """An admin's request for a service-to-service key; the key is shown once."""

    name: str = Field(min_length=1, max_length=255, description="What the key is for.")
    owner_id: str = Field(min_length=1, max_length=255, description="The caller the key acts as.")
    roles: list[RoleName] = Field(
        default_factory=lambda: ["user"],
        description="Roles the key's caller gets.",
        max_length=32,
    )


class ApiKeyOut(BaseModel):
    """An API key's public facts; the secret itself is never stored or shown."""

    id: str = Field(description="Key id, for revocation.")
    name: str = Field(description="What the key is for.")
    prefix: str = Field(description="The key's first characters, to tell keys apart.")
    owner_id: str = Field(description="The caller the key acts as.")
    roles: list[str] = Field(description="Roles the key's caller gets.")
    created_by: str = Field(description="Who created the key.")
    created_at: datetime = Field(description="Creation time.")
    last_used_at: datetime | None = Field(description="Last use (minute precision).")
    revoked_at: datetime | None = Field(description="Revocation time, if revoked.")


class ApiKeyCreated(ApiKeyOut):
    """A new key with its secret: the only answer that ever carries it."""

    key: str = Field(description="The key itself. Shown only in this response; store it now.")


class ApiKeyList(BaseModel):
    """Every API key, so an admin can review and revoke them."""

    data: list[ApiKeyOut] = Field(description="Keys, newest first.")


class AuditEntryOut(BaseModel):
    """One audited action: who did what to which object."""

    id: str = Field(description="Entry id.")
    at: datetime = Field(description="When it happened.")
    actor_id: str = Field(description="Who did it.")
    action: str = Field(description="What was done, e.g. `conversation.purge`.")
    target_type: str = Field(description="Kind of object acted on.")
    target_id: str = Field(description="Id of the object acted on.")
    details: dict[str, Any] | None = Field(description="Extra facts; never secrets.")


class AuditPageOut(BaseModel):
    """A page of the audit log, newest first."""

    data: list[AuditEntryOut] = Field(description="Entries, newest first.")
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page.")
