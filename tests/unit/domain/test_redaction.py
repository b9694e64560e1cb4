"""The one list of secret shapes, as the providers and the log filter both use it."""

from __future__ import annotations

from typing import Any

import pytest

from app.domain.redaction import REDACTED, is_secret_name, redact, redact_value, url_secrets

R = REDACTED


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("key sk-proj-AbC_12*** used", f"key {R} used", id="openai-masked-key"),
        pytest.param("sk-ant-api03-abcdefgh.", f"{R}.", id="anthropic-key-before-a-full-stop"),
        pytest.param("our cbff_0123456789abcdef", f"our {R}", id="service-api-key"),
        pytest.param("aws AKIAABCDEFGHIJKLMNOP", f"aws {R}", id="aws-access-key"),
        pytest.param("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl", f"jwt {R}", id="jwt"),
        pytest.param("got Bearer abc.def", f"got Bearer {R}", id="bearer-keeps-its-scheme"),
        pytest.param("Basic dXNlcjpwYXNzd29yZA==", f"Basic {R}", id="basic-credentials"),
        pytest.param(
            "Authorization: Bearer abc.def-ghijklmnop",
            f"Authorization: Bearer {R}",
            id="authorization-header",
        ),
        pytest.param(
            "url https://x.test/?api_key=hunter2hunter2&n=1",
            f"url https://x.test/?api_key={R}&n=1",
            id="query-parameter",
        ),
        pytest.param(
            "GET https://x.test/v1?key=AIzaSyA-12&sig=s1gn&n=1",
            f"GET https://x.test/v1?key={R}&sig={R}&n=1",
            id="key-and-signature-query-parameters",
        ),
        pytest.param('{"password": "hunter2hunter2"}', f'{{"password": "{R}"}}', id="json-pair"),
        pytest.param("x-api-key: abcd1234", f"x-api-key: {R}", id="api-key-header"),
        pytest.param(
            "via https://u:p@h.example/x ok", f"via https://{R}@h.example/x ok", id="url-userinfo"
        ),
        pytest.param("the task-runner failed", "the task-runner failed", id="words-untouched"),
        pytest.param("a basic idea, token budget", "a basic idea, token budget", id="prose"),
    ],
)
def test_secret_shapes_are_replaced_and_their_context_kept(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_configured_secrets_are_replaced_whatever_their_shape() -> None:
    assert redact("plain hunter22 and hunter22x", ["hunter22", "hunter22x"]) == f"plain {R} and {R}"


def test_a_configured_secret_shorter_than_four_characters_is_left_alone() -> None:
    assert redact("abc is not a secret", ["abc"]) == "abc is not a secret"


def test_redacting_twice_changes_nothing_more() -> None:
    once = redact("Authorization: Bearer abc.def sk-proj-0123456789")
    assert redact(once) == once


@pytest.mark.parametrize("name", ["api_key", "apikey", "X-Token", "password", "cookie", "secret"])
def test_secret_names_are_recognised(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["model", "status", "detail"])
def test_ordinary_names_are_not_secret(name: str) -> None:
    assert not is_secret_name(name)


def test_values_under_secret_names_and_secret_text_in_nested_values_are_replaced() -> None:
    value: dict[str, Any] = {
        "token": "t",
        "detail": {"nested": "uses hunter22", "items": ["sk-proj-0123456789", 3]},
    }
    assert redact_value(value, ["hunter22"]) == {
        "token": R,
        "detail": {"nested": f"uses {R}", "items": [R, 3]},
    }


def test_a_configured_urls_key_parts_are_secrets_and_its_plain_parts_are_not() -> None:
    url = (
        "https://u:pw99@gw.test/v1/k7f3a09c1d2e4b5a6/deployments/gpt-4o-mini-2024-07-18"
        "?api-version=2024-06-01&key=short&token=a%2Bb%3D"
    )
    assert url_secrets(url) == ["a%2Bb%3D", "a+b=", "k7f3a09c1d2e4b5a6", "pw99", "short"]
    assert url_secrets("https://api.openai.com/v1") == []
