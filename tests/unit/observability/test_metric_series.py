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


EDGES = [0.0, 0.005, 0.0051, 0.01, 0.3, 1.0, 2.5, 59.9, 60.0, 61.0, 1e9, -1.0, float("nan")]


def _exposed(metrics: Metrics) -> list[str]:
    text = metrics.render()[0].decode()
    return [
        line
        for line in text.splitlines()
        if line.startswith("chatbff_") and "_created" not in line.split("{")[0]
    ]


def test_observations_are_exposed_as_the_librarys_own_observe_exposes_them() -> None:
    ours, library = Metrics(), Metrics()
    for seconds in EDGES:
        ours.observe_ttft("m1", seconds)
        ours.observe_provider_call("openai", "m1", seconds)
        ours.observe_request("POST", "/api/chat", 200, seconds)
        ours.run_finished("completed", seconds)
        library._ttft("m1").observe(seconds)
        library._provider_seconds("openai", "m1").observe(seconds)
        library._request_seconds("POST", "/api/chat").observe(seconds)
        library._requests("POST", "/api/chat", "200").inc()
        library._active_runs.dec()
        library._run_seconds("completed").observe(seconds)

    assert _exposed(ours) == _exposed(library)
    assert 'chatbff_time_to_first_token_seconds_bucket{le="0.005",model="m1"} 3.0' in _exposed(ours)
