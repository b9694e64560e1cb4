"""An error a run streams carries OpenAI's error `type`: clients back off on a rate limit."""

from __future__ import annotations

import pytest

from app.api.encoders.responses_objects import stream_error_object


@pytest.mark.parametrize("code", ["rate_limited", "budget_exceeded", "provider_rate_limited"])
def test_every_slow_down_code_is_a_rate_limit_on_a_failed_response(code: str) -> None:
    error = stream_error_object(code, "Slow down.")

    assert (error.code, error.type) == ("rate_limit_exceeded", code)


@pytest.mark.parametrize("code", ["provider_unavailable", "provider_timeout", "internal_error"])
def test_other_codes_are_server_errors_on_a_failed_response(code: str) -> None:
    assert stream_error_object(code, "Down.").code == "server_error"
