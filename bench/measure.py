"""Load generation and statistics: percentiles, measured windows, the stream targets."""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.client import Result, open_conns, post, run_requests
from bench.processes import Service, Upstream, cpu_seconds
from bench.sizes import NATIVE_MARK, OPENAI_MARK, PROMPT, model

# --- statistics -------------------------------------------------------------------------


def pct(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile; None for no data."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


def ms(value: float | None) -> float | None:
    return None if value is None else value * 1000


@dataclass
class Load:
    """One measured batch of requests against one target."""

    results: list[Result]
    wall_s: float
    service_cpu_s: float | None
    upstream_cpu_s: float
    client_cpu_s: float
    expected_tokens: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> list[Result]:
        return [r for r in self.results if r.error is None and r.status == 200]

    @property
    def failures(self) -> int:
        return len(self.results) - len(self.ok)

    @property
    def short(self) -> int:
        return sum(1 for r in self.ok if self.expected_tokens and r.tokens != self.expected_tokens)

    @property
    def tokens(self) -> int:
        return sum(r.tokens for r in self.ok)

    def summary(self) -> dict[str, Any]:
        ttfts = [t for r in self.ok if (t := r.ttft) is not None]
        gaps = [g for r in self.ok for g in r.gaps]
        tokens = self.tokens
        out: dict[str, Any] = {
            "requests": len(self.results),
            "failed": self.failures,
            "short_streams": self.short,
            "tokens": tokens,
            "wall_s": round(self.wall_s, 3),
            "requests_per_s": round(len(self.ok) / self.wall_s, 1) if self.wall_s else None,
            "chunks_per_s": round(tokens / self.wall_s, 1) if self.wall_s and tokens else None,
            "ttft_p50_ms": ms(pct(ttfts, 50)),
            "ttft_p99_ms": ms(pct(ttfts, 99)),
            "gap_p50_ms": ms(pct(gaps, 50)),
            "gap_p99_ms": ms(pct(gaps, 99)),
            "gap_max_ms": ms(max(gaps)) if gaps else None,
            "tokens_per_read": round(tokens / reads, 2)
            if (reads := sum(r.reads for r in self.ok))
            else None,
            "service_cpu_ms": None if self.service_cpu_s is None else self.service_cpu_s * 1000,
            "upstream_cpu_ms": self.upstream_cpu_s * 1000,
            "client_cpu_ms": self.client_cpu_s * 1000,
        }
        if self.service_cpu_s is not None and tokens:
            out["cpu_ms_per_1k_chunks"] = self.service_cpu_s * 1000 / tokens * 1000
        out.update(self.extra)
        return out


def own_cpu() -> float:
    t = os.times()
    return t.user + t.system


async def measure(
    port: int,
    requests: Sequence[bytes],
    *,
    concurrency: int,
    service: Service | None,
    upstream: Upstream,
    marker: bytes = b"",
    gaps: bool = False,
    expected_tokens: int = 0,
    timeout: float = 90.0,
) -> Load:
    conns = await open_conns(port, concurrency)
    await asyncio.sleep(0.05)
    svc0 = cpu_seconds(service.pid) if service else 0.0
    up0, me0 = cpu_seconds(upstream.proc.pid), own_cpu()
    results, wall = await run_requests(
        port,
        requests,
        concurrency=concurrency,
        marker=marker,
        gaps=gaps,
        timeout=timeout,
        conns=conns,
    )
    svc = cpu_seconds(service.pid) - svc0 if service else None
    up, me = cpu_seconds(upstream.proc.pid) - up0, own_cpu() - me0
    for conn in conns:
        conn.close()
    return Load(results, wall, svc, up, me, expected_tokens)


async def one_at_a_time(
    targets: Sequence[tuple[str, int, Sequence[bytes], bytes]], rounds: int, expected: int
) -> dict[str, Any]:
    """Time to first token with one stream in flight, the targets taking turns request by
    request, so that whatever else the machine is doing weighs on all of them alike.

    Each round takes its turns in a shuffled order (the same every run): a request that
    follows another build's worker reads 0.5-0.7 ms slower than one that follows its own
    worker's, so in a fixed order the first route of each build always paid it
    (`bench.compare` read /v1/chat/completions that much above /api/chat, and the reverse
    when the two were swapped; in one worker they read the same)."""
    conns = {name: (await open_conns(port, 1))[0] for name, port, _, _ in targets}
    results: dict[str, list[Result]] = {name: [] for name, _, _, _ in targets}
    order, shuffle = list(targets), random.Random(rounds).shuffle
    started = time.perf_counter()
    for n in range(rounds):
        shuffle(order)
        for name, _, requests, marker in order:
            try:
                result = await asyncio.wait_for(conns[name].send(requests[n], marker=marker), 10)
            except TimeoutError:
                result = Result(error="timeout")
            results[name].append(result)
    wall = time.perf_counter() - started
    for conn in conns.values():
        conn.close()
    return {
        name: Load(found, wall, None, 0.0, 0.0, expected).summary()
        for name, found in results.items()
    }


# --- the two kinds of stream request ----------------------------------------------------


@dataclass(frozen=True)
class Target:
    name: str
    path: str
    marker: bytes
    direct: bool = False

    def request(self, port: int, chunks: int, delay: int, *, stream: bool = True) -> bytes:
        body: dict[str, Any] = {"model": model(chunks, delay), "messages": PROMPT}
        body["stream"] = stream
        if self.direct and stream:
            body["stream_options"] = {"include_usage": True}  # what chat-bff asks upstream
        return post(self.path, body, port=port)


DIRECT = Target("direct", "/v1/chat/completions", OPENAI_MARK, direct=True)
V1 = Target("v1", "/v1/chat/completions", OPENAI_MARK)
CHAT = Target("chat", "/api/chat", NATIVE_MARK)
