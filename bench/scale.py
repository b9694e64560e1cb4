"""Issue 12 item 5: what more processes buy. `python -m bench.scale [--full]`

One run, the same fake OpenAI upstream (`bench.upstream`) and the same load generator
(`bench.client`) for every configuration, all on loopback:

- chat-bff under uvicorn with 1, 2 and 4 workers;
- two instances (one worker each) behind nginx as the README documents it (`bench.nginx`).

Every configuration shares one fresh Postgres database and Redis (db 13), as a
deployment of several processes must, so only the process layout changes; one more
configuration, first, is what `bench.run` measures (one worker, SQLite, no Redis), so
what Postgres and Redis cost shows side by side under the same load. Per configuration:
chunks/s with 200 streams at 0 ms pacing, the inter-chunk gap p99 of 200 streams paced at
5 ms (beside the same streams read directly from the upstream), and non-streaming
requests/s at concurrency 50, all on `/v1/chat/completions`; plus the CPU of chat-bff's
processes per 1,000 chunks and per request, and the busiest process's share of it (how
evenly the workers' shared socket spread the connections). Each configuration is bounded
(`--budget` seconds of load, start-up aside); before each measurement the processes are
let settle (the last worker to start, or what a cut measurement left running, must not
weigh on the next). On a 2-core machine the upstream, nginx and this load generator
share the cores with chat-bff, and on a shared one so does everyone else: wall-clock
figures follow the load average (printed per configuration), CPU per unit much less.
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
ALONE = "1 worker, SQLite, no Redis"


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
    return sum(processes_cpu([root]).values())


def processes_cpu(roots: list[int]) -> dict[int, float]:
    """CPU seconds of each process in the trees below `roots` (uvicorn's workers)."""
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
    found: dict[int, float] = {}
    todo = list(roots)
    while todo:
        pid = todo.pop()
        found[pid] = times.get(pid, 0.0)
        todo += [child for child, parent in parents.items() if parent == pid]
    return found


async def settled(roots: list[int], limit_s: float = 90.0) -> float:
    """Wait until the processes stop burning CPU, at most `limit_s`; the seconds waited.
    After start-up: every worker has finished starting (`/healthz` answers as soon as
    the first one does; on a loaded machine the last one may need a minute). Between
    measurements: what a measurement cut at its bound left running has ended."""
    began = time.perf_counter()
    deadline = began + limit_s
    before = tree_total(roots)
    while time.perf_counter() < deadline:
        await asyncio.sleep(0.5)
        now = tree_total(roots)
        if now - before < 0.05:
            break
        before = now
    return time.perf_counter() - began


def tree_total(roots: list[int]) -> float:
    return sum(processes_cpu(roots).values())


async def load(port: int, bounds: Bounds, upstream: Upstream, roots: list[int]) -> dict[str, Any]:
    """The three measurements against one port, each given a third of the budget."""
    share = bounds.budget_s / 3
    out: dict[str, Any] = {"load_average": os.getloadavg()[0]}

    async def timed(key: str, run: Awaitable[Load]) -> None:
        waited = await settled(roots, limit_s=share)
        cpu0 = processes_cpu(roots)
        done = await run
        cpu1 = processes_cpu(roots)
        out[key] = bounded(done, {p: t - cpu0.get(p, 0.0) for p, t in cpu1.items()})
        out[key]["settled_s"] = round(waited, 1)

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


def bounded(done: Load, cpu: dict[int, float]) -> dict[str, Any]:
    """Figures of a run cut at its bound: chunks that arrived (streams still open at the
    bound included) per second from the first request sent to the last chunk received,
    gaps between them (a cut stream's wait since its last chunk included), requests
    completed (a stream is complete at its `[DONE]`); CPU per unit and the busiest
    process's share of it (`cpu`: seconds per process)."""
    cpu_s = sum(cpu.values())
    chunks = sum(r.tokens for r in done.results)
    cut = [r for r in done.results if r.error == "timeout"]
    sent = [r.sent_at for r in done.results if r.sent_at]
    arrived = [r.last_token_at for r in done.results if r.last_token_at is not None]
    span = max(arrived) - min(sent) if arrived and sent else done.wall_s
    gaps = [g for r in done.results for g in r.gaps]
    # A stream cut at the bound has waited since its last chunk: a stall its reader saw.
    gaps += [r.done_at - r.last_token_at for r in cut if r.last_token_at is not None]
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
        "cpu_ms_per_request": round(cpu_s * 1e3 / len(done.ok), 2) if done.ok else None,
        "cpu_s": round(cpu_s, 2),
        "busiest_share": round(max(cpu.values()) / cpu_s, 2) if cpu_s > 0 else None,
        "cores_used": round(cpu_s / done.wall_s, 2) if done.wall_s else None,
    }


async def direct(bounds: Bounds, upstream: Upstream) -> dict[str, Any]:
    port = upstream.port
    requests = [DIRECT.request(port, bounds.paced_chunks, 5)] * bounds.streams
    paced = await measure(port, requests, concurrency=bounds.streams, service=None,
        upstream=upstream, marker=DIRECT.marker, gaps=True, timeout=bounds.budget_s)  # fmt: skip
    return {"paced": bounded(paced, {})}


async def workers(
    count: int, bounds: Bounds, upstream: Upstream, base: dict[str, Any], tag: str = "w"
) -> dict[str, Any]:
    service = await start_service(**base, tag=f"scale-{tag}{count}", workers=count)
    try:
        waited = await settled([service.pid])
        result = await load(service.port, bounds, upstream, [service.pid])
    finally:
        service.stop()
    return {"startup_s": round(service.startup_s + waited, 2), **result}


async def reference(bounds: Bounds, upstream: Upstream, base: dict[str, Any]) -> dict[str, Any]:
    """One worker as `bench.run` has it: SQLite, no Redis."""
    with tempfile.TemporaryDirectory(prefix="chat-bff-scale-") as directory:
        alone = {**base, "database_url": f"sqlite+aiosqlite:///{directory}/reference.db"}
        alone["settings"] = {k: v for k, v in base["settings"].items() if k != "REDIS_URL"}
        return await workers(1, bounds, upstream, alone, tag="sqlite")


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
                result = await load(port, bounds, upstream, [s.pid for s in services])
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
                # The limiter's default pool: the bench's caller has no limits, which
                # costs no Redis connection (a limited one takes one per request).
                "settings": {"REDIS_URL": REDIS_URL},
                "start_limit_s": 120.0,  # the first one migrates a fresh database
            }
            results["direct"] = await direct(bounds, upstream)
            log("direct: done")
            configs: dict[str, Any] = {}
            configs[ALONE] = await reference(bounds, upstream, base)
            log("1 worker on SQLite without Redis: done")
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


def busiest(config: dict[str, Any]) -> Any:
    return config["nonstream"]["busiest_share"]


def incomplete(config: dict[str, Any]) -> int:
    kinds = ("saturated", "paced", "nonstream")
    return sum(config[k]["requests"] - config[k]["completed"] for k in kinds)


def cell(value: float | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:.2f}" if 0 < abs(value) < 10 else f"{value:,.1f}"


def table(results: dict[str, Any]) -> str:
    """Configurations side by side, as markdown."""
    configs: dict[str, Any] = results["configs"]
    names = [n for n, c in configs.items() if "skipped" not in c]
    direct_gap = results["direct"]["paced"]["gap_p99_ms"]

    def row(label: str, pick: Callable[[dict[str, Any]], Any]) -> str:
        cells = [pick(configs[n]) for n in names]
        return f"| {label} | " + " | ".join(cell(c) for c in cells) + " |"

    lines = [
        "| | " + " | ".join(names) + " |",
        "|---" * (len(names) + 1) + "|",
        row("chunks/s, 200 streams, 0 ms pacing", lambda c: c["saturated"]["chunks_per_s"]),
        row("CPU ms / 1,000 chunks (0 ms)", lambda c: c["saturated"].get("cpu_ms_per_1k_chunks")),
        row(f"gap p99 ms, 200 streams at 5 ms (direct {direct_gap:.1f})", gap_p99),
        row("non-streaming requests/s, concurrency 50", lambda c: c["nonstream"]["requests_per_s"]),
        row("CPU ms / non-streaming request", lambda c: c["nonstream"]["cpu_ms_per_request"]),
        row("busiest process's share of the CPU, non-streaming", busiest),
        row("cores chat-bff got, non-streaming (of 2)", lambda c: c["nonstream"]["cores_used"]),
        row("requests not completed within the bound", incomplete),
        row("load average at the configuration's start", lambda c: c["load_average"]),
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
