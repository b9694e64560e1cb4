"""Who is calling: the one identity type every layer receives."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

AuthMethod = Literal["development", "jwt", "api_key", "stream_token"]


@dataclass(frozen=True)
class Caller:
    """The authenticated caller. Ownership checks compare `user_id`, nothing else."""

    user_id: str
    roles: frozenset[str] = field(default_factory=frozenset)
    method: AuthMethod = "development"

    @property
    def is_admin(self) -> bool:
        return "admin" in self.roles
