"""Prometheus metrics, one registry per app instance (no import-time globals).

`Metrics` is built once by `create_app` and handed to the container.
Callers use its small API, never the prometheus objects:

    metrics.run_started()                         # active runs +1
    metrics.run_finished(status, seconds)         # active runs -1, duration observed
    metrics.observe_ttft(model, seconds)          # time to first token of a model call
    metrics.observe_provider_call(provider, model, seconds)
    metrics.provider_error(provider, model, code)
    metrics.add_tokens(model, input_tokens=..., output_tokens=...)
    metrics.usage_recorded(call)                  # cached tokens, cost, estimated calls
    metrics.tool_call(tool, outcome)              # success | error | cancelled | ...
    metrics.prepare(models, run_statuses)         # start-up: the series calls and runs add to

Requests and active SSE streams are counted by the request middleware. Labels are route
templates, model ids from the catalogue, tool names from the registry: never raw paths
or user input, so cardinality stays bounded.

A series is looked up by its label values in a dict of the children already made
(`_Series`): prometheus_client's `labels()` checks and converts its arguments and takes
a lock on every call (about 4 us here), and a request asks for seven series on its way.
The child is the one `labels()` made, so what is exposed is unchanged.

A stream makes four histogram observations and five counter or gauge steps; the
library's `observe` checks on every call what holds for every series here (observable,
no exemplar) and walks the bucket bounds in Python (5 us an observation). `_observe`
finds the bucket by bisection and adds to the child's own values, under their locks, so
`/metrics` reads as it did (`tests/unit/test_metrics_exposition.py` compares the two).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from typing import Generic, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.gc_collector import GCCollector

from app.domain.usage import CallUsage

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
_RUN_BUCKETS = (0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800)

_M = TypeVar("_M", Counter, Histogram)


class _Series(Generic[_M]):
    """A labelled metric's children by their label values, each made once by `labels()`
    (no child is ever removed, so a kept one stays the one exposed)."""

    __slots__ = ("_made", "_parent")

    def __init__(self, parent: _M) -> None:
        self._parent: _M = parent
        self._made: dict[tuple[str, ...], _M] = {}

    def __call__(self, *values: str) -> _M:
        child = self._made.get(values)
        if child is None:
            child = self._made[values] = self._parent.labels(*values)
        return child


def _observe(child: Histogram, amount: float) -> None:
    """`child.observe(amount)`, the same sum and bucket counts (a NaN counts in no bucket,
    as there)."""
    child._sum.inc(amount)
    if amount == amount:  # not NaN
        child._buckets[bisect_left(child._upper_bounds, amount)].inc(1)


class Metrics:
    """The service's metric series, registered on a private `CollectorRegistry`."""

    def __init__(
        self, registry: CollectorRegistry | None = None, *, prefix: str = "chatbff"
    ) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        r, p = self.registry, prefix
        # `python_gc_collections_total{generation}` and what they freed: a full collection
        # stops the event loop for as long as it walks every open stream (seconds at
        # thousands of streams; see `app.observability.memory.serving_collector`).
        GCCollector(registry=r)
        self._requests = _Series(
            Counter(
                f"{p}_http_requests_total",
                "HTTP requests by method, route template and status.",
                ["method", "route", "status"],
                registry=r,
            )
        )
        self._request_seconds = _Series(
            Histogram(
                f"{p}_http_request_duration_seconds",
                "Time to the end of the response, by method and route template.",
                ["method", "route"],
                buckets=_LATENCY_BUCKETS,
                registry=r,
            )
        )
        self._active_streams = Gauge(f"{p}_active_streams", "Open SSE responses.", registry=r)
        self._active_runs = Gauge(f"{p}_active_runs", "Runs in progress.", registry=r)
        self._run_seconds = _Series(
            Histogram(
                f"{p}_run_duration_seconds",
                "Wall-clock duration of runs by final status.",
                ["status"],
                buckets=_RUN_BUCKETS,
                registry=r,
            )
        )
        self._ttft = _Series(
            Histogram(
                f"{p}_time_to_first_token_seconds",
                "Time from the model call to its first streamed token, by model.",
                ["model"],
                buckets=_LATENCY_BUCKETS,
                registry=r,
            )
        )
        self._provider_seconds = _Series(
            Histogram(
                f"{p}_provider_latency_seconds",
                "Duration of upstream model calls by provider and model.",
                ["provider", "model"],
                buckets=_RUN_BUCKETS,
                registry=r,
            )
        )
        self._provider_errors = _Series(
            Counter(
                f"{p}_provider_errors_total",
                "Upstream failures by provider, model and error code.",
                ["provider", "model", "code"],
                registry=r,
            )
        )
        self._tokens_in = _Series(
            Counter(
                f"{p}_tokens_input_total",
                "Prompt tokens sent upstream by model.",
                ["model"],
                registry=r,
            )
        )
        self._tokens_out = _Series(
            Counter(
                f"{p}_tokens_output_total",
                "Completion tokens received by model.",
                ["model"],
                registry=r,
            )
        )
        self._tokens_cached = _Series(
            Counter(
                f"{p}_tokens_cached_total",
                "Prompt tokens the provider served from its cache, by model.",
                ["model"],
                registry=r,
            )
        )
        self._cost = _Series(
            Counter(
                f"{p}_cost_total",
                "What model calls cost (catalogue prices), by model.",
                ["model"],
                registry=r,
            )
        )
        self._estimated_calls = _Series(
            Counter(
                f"{p}_usage_estimated_calls_total",
                "Model calls whose provider reported no usage (counted here), by model.",
                ["model"],
                registry=r,
            )
        )
        self._tool_calls = _Series(
            Counter(
                f"{p}_tool_calls_total",
                "Tool calls by tool and outcome.",
                ["tool", "outcome"],
                registry=r,
            )
        )
        self._rate_limited = _Series(
            Counter(
                f"{p}_rate_limited_total",
                "Requests refused by a per-caller limit, by limit.",
                ["limit"],
                registry=r,
            )
        )

    def prepare(self, models: Iterable[tuple[str, str]], run_statuses: Iterable[str]) -> None:
        """Make, at start-up, the series every model call and every run's end adds to: by
        (provider, upstream model) of the catalogue and by final run status. They are
        exposed from the start at zero (as Prometheus advises for known label values).

        Why now: a series made by the first call of a burst of streams (a model's first
        use, the first cancelled run) is ~25 small blocks that live as long as the worker,
        made while the burst's streams fill the heap; after they close, each keeps a page
        or two of otherwise free heap resident (about a third of the blocks a 1,500-stream
        burst left behind, `BENCH_TRACE_FRAMES=12 python -m bench.memory --probe DIR`)."""
        for provider, model in models:
            self._ttft(model)
            self._provider_seconds(provider, model)
            self._tokens_in(model)
            self._tokens_out(model)
        for status in run_statuses:
            self._run_seconds(status)

    # --- HTTP (called by the middleware) -------------------------------------------------
    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        self._requests(method, route, str(status)).inc()
        _observe(self._request_seconds(method, route), seconds)

    def stream_opened(self) -> None:
        self._active_streams.inc()

    def stream_closed(self) -> None:
        self._active_streams.dec()

    # --- runs (called by the run manager) ------------------------------------------------
    def run_started(self) -> None:
        self._active_runs.inc()

    def run_finished(self, status: str, seconds: float) -> None:
        self._active_runs.dec()
        _observe(self._run_seconds(status), seconds)

    def observe_ttft(self, model: str, seconds: float) -> None:
        _observe(self._ttft(model), seconds)

    def observe_provider_call(self, provider: str, model: str, seconds: float) -> None:
        _observe(self._provider_seconds(provider, model), seconds)

    def provider_error(self, provider: str, model: str, code: str) -> None:
        self._provider_errors(provider, model, code).inc()

    def add_tokens(self, model: str, *, input_tokens: int = 0, output_tokens: int = 0) -> None:
        if input_tokens:
            self._tokens_in(model).inc(input_tokens)
        if output_tokens:
            self._tokens_out(model).inc(output_tokens)

    def usage_recorded(self, call: CallUsage) -> None:
        """A model call's usage was booked: its cached tokens, its cost, and whether its
        tokens were counted here (prompt and completion tokens are counted per call by
        the instrumented providers)."""
        if call.cached_tokens:
            self._tokens_cached(call.model).inc(call.cached_tokens)
        if call.cost:
            self._cost(call.model).inc(call.cost)
        if call.estimated:
            self._estimated_calls(call.model).inc()

    def tool_call(self, tool: str, outcome: str) -> None:
        self._tool_calls(tool, outcome).inc()

    # --- limits --------------------------------------------------------------------------
    def rate_limited(self, limit: str) -> None:
        self._rate_limited(limit).inc()

    # --- exposition ----------------------------------------------------------------------
    def render(self) -> tuple[bytes, str]:
        """The text exposition format and its content type."""
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
