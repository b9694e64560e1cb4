"""Issue 12 item 5: what more processes buy. `python -m bench.scale [--full]`

One run, the same fake OpenAI upstream (`bench.upstream`) and the same load generator
(`bench.client`) for every configuration, all on loopback:

- chat-bff under uvicorn with 1, 2 and 4 workers;
- two instances (one worker each) behind nginx as the README documents it (`bench.nginx`).

Every configuration shares one fresh Postgres database and Redis (db 13, a pool of 250),
as a deployment of several processes must, so only the process layout changes. Per
configuration: chunks/s with 200 streams at 0 ms pacing, the inter-chunk gap p99 of 200
streams paced at 5 ms (beside the same streams read directly from the upstream), and
non-streaming requests/s at concurrency 50, all on `/v1/chat/completions`; plus the CPU
of chat-bff's processes per 1,000 chunks. Each configuration is bounded (`--budget`
seconds of load, start-up aside). On a 2-core machine the upstream, nginx and this load
generator share the cores with chat-bff, so more than two workers can only show the cost
of more processes; the load average is printed at the start and end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from bench.client import run_requests
from bench.measure import DIRECT, V1, Load, measure, ms, pct
from bench.nginx import installed, nginx
from bench.persisted import postgres_database
from bench.processes import Service, Upstream, catalogue, free_port, http_status, start_service
from bench.sizes import CLK_TCK, ROOT

REDIS_URL = "redis://127.0.0.1:6379/13"
RESULTS = ROOT / "bench" / "scale_results.json"


@dataclass(frozen=True)
class Bounds:
    streams: int = 200
    chunks: int = 200
    paced_chunks: int = 200
    nonstream_n: int = 2000
    budget_s: float = 20.0  # the whole load of one configuration, at most


SMALL = Bounds(chunks=40, paced_chunks=40, nonstream_n=300, budget_s=18.0)


def tree_cpu(root: int) -> float:
    """CPU seconds of `root` and every process below it (uvicorn's workers)."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        parents[int(entry.name)] = int(fields[1])
        times[int(entry.name)] = (int(fields[11]) + int(fields[12])) / CLK_TCK
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += times.get(pid, 0.0)
        todo += [child for child, parent in parents.items() if parent == pid]
    return total


async def settled(roots: list[int], limit_s: float = 10.0) -> None:
    """Wait until the processes stop burning CPU: every worker has finished starting
    (`/healthz` answers as soon as the first one does)."""
    deadline = time.perf_counter() + limit_s
    before = sum(tree_cpu(r) for r in roots)
    while time.perf_counter() < deadline:
        await asyncio.sleep(0.5)
        now = sum(tree_cpu(r) for r in roots)
        if now - before < 0.05:
            return
        before = now


async def load(
    port: int, bounds: Bounds, upstream: Upstream, cpu: Callable[[], float]
) -> dict[str, Any]:
    """The three measurements against one port, each given a third of the budget."""
    share = bounds.budget_s / 3
    out: dict[str, Any] = {}

    async def timed(key: str, run: Awaitable[Load]) -> None:
        cpu0 = cpu()
        done = await run
        out[key] = bounded(done, cpu() - cpu0)

    await run_requests(port, [V1.request(port, 5, 0)] * 20, concurrency=4, marker=V1.marker)
    streams = partial(measure, port, concurrency=bounds.streams, service=None,
                      upstream=upstream, marker=V1.marker, timeout=share)  # fmt: skip
    await timed("saturated", streams([V1.request(port, bounds.chunks, 0)] * bounds.streams))
    paced = [V1.request(port, bounds.paced_chunks, 5)] * bounds.streams
    await timed("paced", streams(paced, gaps=True))
    plain = [V1.request(port, 20, 0, stream=False)] * bounds.nonstream_n
    await timed("nonstream", measure(port, plain, concurrency=50, service=None,
                                     upstream=upstream, timeout=share))  # fmt: skip
    return out


def bounded(done: Load, cpu_s: float) -> dict[str, Any]:
    """Figures of a run cut at its bound: chunks that arrived (streams still open at the
    bound included) per second from the first request sent to the last chunk received,
    gaps between them, requests completed (a stream is complete at its `[DONE]`)."""
    chunks = sum(r.tokens for r in done.results)
    sent = [r.sent_at for r in done.results if r.sent_at]
    arrived = [r.last_token_at for r in done.results if r.last_token_at is not None]
    span = max(arrived) - min(sent) if arrived and sent else done.wall_s
    gaps = [g for r in done.results for g in r.gaps]
    failed = [r.error or f"HTTP {r.status}" for r in done.results if r not in done.ok]
    return {
        "requests": len(done.results),
        "completed": len(done.ok),
        "incomplete": dict(Counter(failed)),
        "wall_s": round(done.wall_s, 2),
        "chunks": chunks,
        "chunks_per_s": round(chunks / span, 1) if chunks else None,
        "requests_per_s": round(len(done.ok) / done.wall_s, 1) if done.wall_s else None,
        "gap_p50_ms": ms(pct(gaps, 50)),
        "gap_p99_ms": ms(pct(gaps, 99)),
        "cpu_ms_per_1k_chunks": round(cpu_s * 1e6 / chunks, 1) if chunks else None,
        "cpu_s": round(cpu_s, 2),
    }


async def direct(bounds: Bounds, upstream: Upstream) -> dict[str, Any]:
    port = upstream.port
    requests = [DIRECT.request(port, bounds.paced_chunks, 5)] * bounds.streams
    paced = await measure(port, requests, concurrency=bounds.streams, service=None,
        upstream=upstream, marker=DIRECT.marker, gaps=True, timeout=bounds.budget_s)  # fmt: skip
    return {"paced": bounded(paced, 0.0)}


async def workers(
    count: int, bounds: Bounds, upstream: Upstream, base: dict[str, Any]
) -> dict[str, Any]:
    service = await start_service(**base, tag=f"scale-w{count}", workers=count)
    try:
        await settled([service.pid])
        result = await load(service.port, bounds, upstream, lambda: tree_cpu(service.pid))
    finally:
        service.stop()
    return {"startup_s": round(service.startup_s, 2), **result}


async def behind_nginx(bounds: Bounds, upstream: Upstream, base: dict[str, Any]) -> dict[str, Any]:
    if not installed():
        return {"skipped": "nginx is not installed (apt-get install nginx-light)"}
    port, ports = free_port(), [free_port(), free_port()]
    services: list[Service] = []
    with tempfile.TemporaryDirectory(prefix="chat-bff-nginx-") as directory:
        try:
            for n, instance in enumerate(ports):
                services.append(await start_service(**base, tag=f"scale-i{n}", port=instance))
            with nginx(Path(directory), port, ports) as proxy:
                deadline = time.perf_counter() + 10
                while await http_status(port, "/healthz") != 200:
                    if time.perf_counter() > deadline:
                        raise RuntimeError("nginx never answered /healthz")
                    await asyncio.sleep(0.05)
                await settled([s.pid for s in services])
                result = await load(
                    port, bounds, upstream, lambda: sum(tree_cpu(s.pid) for s in services)
                )
                proxy_cpu = tree_cpu(proxy.pid)
        finally:
            for service in services:
                service.stop()
    return {"nginx_cpu_s": round(proxy_cpu, 2), **result}


async def main_async(bounds: Bounds) -> dict[str, Any]:
    began = time.perf_counter()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - began:6.1f}s] {message}", file=sys.stderr, flush=True)

    results: dict[str, Any] = {"bounds": bounds.__dict__, "load_average_at_start": os.getloadavg()}
    upstream = Upstream.start()
    shapes = [(5, 0), (bounds.chunks, 0), (bounds.paced_chunks, 5), (20, 0)]
    try:
        async with postgres_database() as database_url:
            base = {
                "upstream": upstream,
                "database_url": database_url,
                "models_json": catalogue(shapes),
                "app_spec": ["app.main:app"],
                # 200 streams at once on one process: the default pool (50 connections,
                # 1 s wait) answers some with 503 limiter_busy on these shared cores.
                "settings": {
                    "REDIS_URL": REDIS_URL,
                    "REDIS_POOL_SIZE": "250",
                    "REDIS_POOL_TIMEOUT_SECONDS": "5",
                },
                "start_limit_s": 120.0,  # the first one migrates a fresh database
            }
            results["direct"] = await direct(bounds, upstream)
            log("direct: done")
            configs: dict[str, Any] = {}
            for count in (1, 2, 4):
                started = time.perf_counter()
                configs[f"{count} worker{'s' if count > 1 else ''}"] = await workers(
                    count, bounds, upstream, base
                )
                log(f"{count} workers: done in {time.perf_counter() - started:.1f} s")
            started = time.perf_counter()
            configs["2 instances + nginx"] = await behind_nginx(bounds, upstream, base)
            log(f"2 instances behind nginx: done in {time.perf_counter() - started:.1f} s")
            results["configs"] = configs
    finally:
        upstream.stop()
    results["load_average_at_end"] = os.getloadavg()
    results["elapsed_s"] = round(time.perf_counter() - began, 1)
    return results


def gap_p99(config: dict[str, Any]) -> Any:
    return config["paced"]["gap_p99_ms"]


def incomplete(config: dict[str, Any]) -> int:
    kinds = ("saturated", "paced", "nonstream")
    return sum(config[k]["requests"] - config[k]["completed"] for k in kinds)


def table(results: dict[str, Any]) -> str:
    """Configurations side by side, as markdown."""
    configs: dict[str, Any] = results["configs"]
    names = [n for n, c in configs.items() if "skipped" not in c]
    direct_gap = results["direct"]["paced"]["gap_p99_ms"]

    def row(label: str, pick: Callable[[dict[str, Any]], Any]) -> str:
        cells = [pick(configs[n]) for n in names]
        return f"| {label} | " + " | ".join("-" if c is None else f"{c:,.1f}" for c in cells) + " |"

    lines = [
        "| | " + " | ".join(names) + " |",
        "|---" * (len(names) + 1) + "|",
        row("chunks/s, 200 streams, 0 ms pacing", lambda c: c["saturated"]["chunks_per_s"]),
        row("CPU ms / 1,000 chunks (0 ms)", lambda c: c["saturated"].get("cpu_ms_per_1k_chunks")),
        row(f"gap p99 ms, 200 streams at 5 ms (direct {direct_gap:.1f})", gap_p99),
        row("non-streaming requests/s, concurrency 50", lambda c: c["nonstream"]["requests_per_s"]),
        row("requests not completed within the bound", incomplete),
    ]
    skipped = [f"{n}: {c['skipped']}" for n, c in configs.items() if "skipped" in c]
    return "\n".join(lines + skipped)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--full", action="store_true", help="200 chunks a stream, 2,000 requests")
    parser.add_argument("--budget", type=float, help="seconds of load per configuration")
    args = parser.parse_args()
    bounds = Bounds() if args.full else SMALL
    if args.budget:
        bounds = Bounds(**{**bounds.__dict__, "budget_s": args.budget})
    results = asyncio.run(main_async(bounds))
    RESULTS.write_text(json.dumps(results, indent=2, default=str) + "\n")
    print(table(results))
    start, end = results["load_average_at_start"][0], results["load_average_at_end"][0]
    print(f"\n{results['elapsed_s']} s; load average at start {start:.1f}, at end {end:.1f}; "
          f"written to {RESULTS.relative_to(ROOT)}")  # fmt: skip


if __name__ == "__main__":
    main()
