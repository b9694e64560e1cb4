"""Each label set is one series, counted across calls, whichever call made it first."""

from __future__ import annotations

from app.domain.usage import CallUsage
from app.observability.metrics import Metrics


def _lines(metrics: Metrics, name: str) -> list[str]:
    text = metrics.render()[0].decode()
    return sorted(line for line in text.splitlines() if line.startswith(name))


def test_a_label_set_is_one_series_across_calls() -> None:
    metrics = Metrics()
    for status in (200, 200, 404, 200):
        metrics.observe_request("POST", "/api/chat", status, 0.003)
    metrics.observe_request("GET", "/api/models", 200, 0.2)
    metrics.add_tokens("m1", input_tokens=3, output_tokens=5)
    metrics.add_tokens("m1", input_tokens=4)
    metrics.add_tokens("m2", output_tokens=1)
    metrics.usage_recorded(CallUsage(model="m1", input_tokens=1, output_tokens=1, cost=0.5))
    metrics.usage_recorded(CallUsage(model="m1", input_tokens=1, output_tokens=1, cost=0.25))

    assert _lines(metrics, "chatbff_http_requests_total{") == [
        'chatbff_http_requests_total{method="GET",route="/api/models",status="200"} 1.0',
        'chatbff_http_requests_total{method="POST",route="/api/chat",status="200"} 3.0',
        'chatbff_http_requests_total{method="POST",route="/api/chat",status="404"} 1.0',
    ]
    assert _lines(metrics, "chatbff_http_request_duration_seconds_count") == [
        'chatbff_http_request_duration_seconds_count{method="GET",route="/api/models"} 1.0',
        'chatbff_http_request_duration_seconds_count{method="POST",route="/api/chat"} 4.0',
    ]
    assert _lines(metrics, "chatbff_tokens_input_total{") == [
        'chatbff_tokens_input_total{model="m1"} 7.0'
    ]
    assert _lines(metrics, "chatbff_tokens_output_total{") == [
        'chatbff_tokens_output_total{model="m1"} 5.0',
        'chatbff_tokens_output_total{model="m2"} 1.0',
    ]
    assert _lines(metrics, "chatbff_cost_total{") == ['chatbff_cost_total{model="m1"} 0.75']


def test_two_apps_count_apart() -> None:
    first, second = Metrics(), Metrics()
    first.observe_ttft("m1", 0.01)
    assert _lines(second, "chatbff_time_to_first_token_seconds_count") == []
    assert _lines(first, "chatbff_time_to_first_token_seconds_count") == [
        'chatbff_time_to_first_token_seconds_count{model="m1"} 1.0'
    ]
