"""The error-mapping kit: one status table, one Retry-After reader, one scrubber."""

from __future__ import annotations

import email.utils

import httpx2
import pytest

from app.domain.errors import (
    ProviderAuthError,
    ProviderBadRequest,
    ProviderError,
    ProviderRateLimited,
    ProviderTimeout,
    ProviderUnavailable,
)
from app.providers.errors import UpstreamErrors, retry_after_seconds

KEY = "sk-canary-kit-0123456789"
NOW = 1_700_000_000.0  # 2023-11-14T22:13:20Z
ERRORS = UpstreamErrors(provider="acme", label="Acme", secret=KEY)


def http_date(moment: float, form: str = "imf") -> str:
    """`moment` as each of the three HTTP-date forms RFC 9110 makes recipients accept."""
    imf = email.utils.formatdate(moment, usegmt=True)  # Tue, 14 Nov 2023 22:13:50 GMT
    weekday, day, month, year, clock, _ = imf.replace(",", "").split()
    names = {"Mon": "Monday", "Tue": "Tuesday", "Wed": "Wednesday", "Thu": "Thursday"}
    names |= {"Fri": "Friday", "Sat": "Saturday", "Sun": "Sunday"}
    if form == "rfc850":
        return f"{names[weekday]}, {day}-{month}-{year[2:]} {clock} GMT"
    if form == "asctime":
        return f"{weekday} {month} {int(day):>2} {clock} {year}"
    return imf


# --- the status table ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("upstream", "kind", "status", "retryable"),
    [
        (400, ProviderBadRequest, 400, False),
        (401, ProviderAuthError, 502, False),
        (402, ProviderBadRequest, 400, False),
        (403, ProviderAuthError, 502, False),
        (404, ProviderBadRequest, 400, False),
        (408, ProviderTimeout, 504, True),
        (409, ProviderBadRequest, 400, False),
        (413, ProviderBadRequest, 400, False),
        (422, ProviderBadRequest, 400, False),
        (429, ProviderRateLimited, 429, True),
        (500, ProviderUnavailable, 502, True),
        (502, ProviderUnavailable, 502, True),
        (503, ProviderUnavailable, 502, True),
        (504, ProviderTimeout, 504, True),
        (529, ProviderUnavailable, 502, True),
        (200, ProviderUnavailable, 502, True),  # an error event inside a 200 stream
    ],
)
def test_each_upstream_status_becomes_one_of_our_errors(
    upstream: int, kind: type[ProviderError], status: int, retryable: bool
) -> None:
    error = ERRORS.for_status(upstream)
    assert type(error) is kind
    assert (error.status, error.retryable, error.provider) == (status, retryable, "acme")


@pytest.mark.parametrize("upstream", [400, 401, 404, 408, 429, 500, 504])
def test_an_http_error_keeps_the_upstream_status(upstream: int) -> None:
    assert ERRORS.for_status(upstream).upstream_status == upstream


@pytest.mark.parametrize(
    ("error", "kind", "status"),
    [
        pytest.param(ERRORS.timeout(), ProviderTimeout, 504, id="client-timeout"),
        pytest.param(ERRORS.connection(), ProviderUnavailable, 502, id="connection-failure"),
        pytest.param(ERRORS.unreadable(200), ProviderUnavailable, 502, id="unreadable-body"),
        pytest.param(ERRORS.incomplete(), ProviderUnavailable, 502, id="cut-short"),
    ],
)
def test_transport_failures_are_retryable_errors_with_our_message(
    error: ProviderError, kind: type[ProviderError], status: int
) -> None:
    assert type(error) is kind
    assert (error.status, error.retryable) == (status, True)
    assert error.message.startswith("Acme ")


def test_a_bad_request_carries_the_upstream_reason_scrubbed() -> None:
    detail = f"context too long (key {KEY}, Bearer abc.def, our cbff_0123456789abcdef)"
    error = ERRORS.for_status(400, detail=detail)
    assert error.message.startswith("Acme refused the request (HTTP 400): context too long")
    for secret in (KEY, "abc.def", "cbff_0123456789abcdef"):
        assert secret not in str(error.to_body())


@pytest.mark.parametrize("detail", [None, 42, ["not", "text"]])
def test_a_reason_that_is_not_text_is_left_out(detail: object) -> None:
    error = ERRORS.for_status(400, detail=detail)
    assert error.message == "Acme refused the request (HTTP 400)."


def test_a_long_upstream_reason_is_cut_to_300_characters() -> None:
    error = ERRORS.for_status(422, detail="x" * 1000)
    reason = error.message.split(": ", 1)[1]
    assert reason == "x" * 300 + "..."


@pytest.mark.parametrize("upstream", [401, 403, 500, 503])
def test_auth_and_server_errors_never_quote_the_upstream_text(upstream: int) -> None:
    error = ERRORS.for_status(upstream, detail="invalid key sk-ant-whatever sent")
    assert "invalid key" not in error.message


def test_a_short_upstream_error_type_is_named() -> None:
    assert ERRORS.for_status(529, kind="overloaded_error").message == (
        "Acme is unavailable (HTTP 529, overloaded_error)."
    )
    assert (
        ERRORS.in_stream("api_error").message == "Acme stopped the response mid-stream (api_error)."
    )


@pytest.mark.parametrize("kind", [f"boom {KEY}", "x" * 65, "", None, 42, {"a": 1}])
def test_an_error_type_that_is_not_a_short_identifier_is_not_shown(kind: object) -> None:
    error = ERRORS.in_stream(kind)
    assert error.message == "Acme stopped the response mid-stream (error)."


def test_a_rate_limit_carries_the_upstream_retry_after() -> None:
    error = ERRORS.for_status(429, headers=httpx2.Headers({"Retry-After": "7"}))
    assert error.retry_after == 7.0


def test_a_rate_limit_without_retry_after_says_none() -> None:
    assert ERRORS.for_status(429).retry_after is None


# --- Retry-After (RFC 9110, 10.2.3) --------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        pytest.param({"retry-after": "120"}, 120.0, id="delay-seconds"),
        pytest.param({"retry-after": "0"}, 0.0, id="zero"),
        pytest.param({"retry-after": " 3 "}, 3.0, id="whitespace"),
        pytest.param({"retry-after": "0.05"}, 0.05, id="fractional-seconds-the-sdks-send"),
        pytest.param({"retry-after-ms": "250"}, 0.25, id="milliseconds"),
        pytest.param({"retry-after-ms": "250", "retry-after": "9"}, 0.25, id="ms-wins"),
        pytest.param({"retry-after-ms": "soon", "retry-after": "9"}, 9.0, id="bad-ms-falls-back"),
        pytest.param({"retry-after": http_date(NOW + 30)}, 30.0, id="imf-fixdate"),
        pytest.param({"retry-after": http_date(NOW + 30, "rfc850")}, 30.0, id="rfc850-date"),
        pytest.param({"retry-after": http_date(NOW + 30, "asctime")}, 30.0, id="asctime-date"),
        pytest.param({"retry-after": http_date(NOW - 3600)}, 0.0, id="date-in-the-past"),
        pytest.param({"retry-after": "soon"}, None, id="garbage"),
        pytest.param({"retry-after": "-5"}, None, id="negative"),
        pytest.param({"retry-after": "1e3"}, None, id="exponent"),
        pytest.param({"retry-after": "9" * 400}, None, id="overflow"),
        pytest.param({"retry-after": ""}, None, id="empty"),
        pytest.param({}, None, id="absent"),
    ],
)
def test_retry_after_is_read_in_both_forms(headers: dict[str, str], expected: float | None) -> None:
    seconds = retry_after_seconds(headers, now=NOW)
    if expected is None:
        assert seconds is None
    else:
        assert seconds == pytest.approx(expected)


def test_retry_after_header_names_are_case_insensitive() -> None:
    assert retry_after_seconds(httpx2.Headers({"Retry-After": "4"})) == 4.0
