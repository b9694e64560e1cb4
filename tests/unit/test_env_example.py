""".env.example documents every setting the service reads."""

from __future__ import annotations

from pathlib import Path

from app.settings import Settings

ENV_EXAMPLE = Path(__file__).resolve().parents[2] / ".env.example"


def test_every_setting_is_documented_in_env_example() -> None:
    text = ENV_EXAMPLE.read_text()
    missing = [name.upper() for name in Settings.model_fields if f"{name.upper()}=" not in text]
    assert missing == []
