"""Who is calling: the one identity type every layer receives."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

from pydantic import SecretStr

AuthMethod = Literal["development", "jwt", "api_key", "stream_token"]


@dataclass(frozen=True)
class Caller:
    """The authenticated caller. Ownership checks compare `user_id`, nothing else."""

    user_id: str
    roles: frozenset[str] = field(default_factory=frozenset)
    method: AuthMethod = "development"
    # The API key the caller authenticated with (its id, never the secret): budgets per key.
    api_key_id: str | None = None
    # The bearer token the caller proved itself with (a JWT), kept only in memory for
    # tools that forward the user's identity (`ForwardedIdentity`); never shown or stored.
    bearer: SecretStr | None = field(default=None, repr=False, compare=False)

    @property
    def is_admin(self) -> bool:
        return "admin" in self.roles


ForwardMode = Literal["off", "bearer", "minted"]


@dataclass(frozen=True)
class ForwardedIdentity:
    """Who a tool calls a downstream API as: the user (`user_token`: the caller's own
    bearer token, or a short-lived token minted for the tool's audience) and, separately,
    the service itself (`service_token`), so the downstream authorises the user and knows
    who relays the call (dual identity). Never logged, stored or shown to the model."""

    user_token: SecretStr = field(repr=False)
    service_token: SecretStr | None = field(default=None, repr=False)
    audience: str | None = None

    def headers(self) -> dict[str, str]:
        """`Authorization` for the user and `X-Service-Authorization` for the service."""
        out = {"Authorization": f"Bearer {self.user_token.get_secret_value()}"}
        if self.service_token is not None:
            out["X-Service-Authorization"] = f"Bearer {self.service_token.get_secret_value()}"
        return out


class IdentityForwarder(Protocol):
    """Builds the identity a tool forwards (the container wires one; `None` when the
    deployment forwards nothing)."""

    def forward(
        self, caller: Caller, mode: ForwardMode, audience: str | None
    ) -> ForwardedIdentity | None:
        """The identity to forward, or None when this caller's cannot be (no bearer token
        to pass on, or no minting key)."""
        ...
