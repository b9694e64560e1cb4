"""Two builds of chat-bff side by side in one run: `python -m bench.compare --baseline DIR`.

DIR is another checkout of the project (a worktree of main, say). Both services run
under uvicorn as `bench.run` starts them (one worker, each from its own tree, the same
interpreter and packages), against one fake upstream. Time to first token at one stream
takes turns request by request across direct, baseline and this tree; CPU per 1,000
chunks alternates the two builds round by round, so the load other work puts on the
machine weighs on both alike; `--nonstream N` adds N non-streaming requests at
concurrency 50 per build, wire and round (CPU per request, requests/s). Medians over the
rounds, the ratio this tree / baseline, and PASS/FAIL for this tree against the goals of
issue 12. `--streams 0 --ttft-n 0 --nonstream 1000` measures non-streaming requests only.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.client import run_requests
from bench.measure import CHAT, DIRECT, V1, Target, measure, one_at_a_time
from bench.processes import Service, Upstream, catalogue, reference_ms, start_service
from bench.sizes import GOALS, ROOT


async def _services(
    upstream: Upstream, baseline: Path, tmp: Path, this_env: dict[str, str]
) -> dict[str, Service]:
    models_json = catalogue([(5, 0), (20, 0), (200, 0)])
    out: dict[str, Service] = {}
    try:
        for name, root in (("baseline", baseline), ("this", ROOT)):
            out[name] = await start_service(
                upstream=upstream,
                database_url=f"sqlite+aiosqlite:///{tmp / name}.db",
                models_json=models_json,
                app_spec=["app.main:app"],
                tag=f"compare-{name}",
                root=root,
                settings=this_env if name == "this" else None,
                start_limit_s=120.0,  # a loaded machine starts slowly
            )
    except BaseException:
        for started in out.values():  # the other one failed: leave no process behind
            started.stop()
        raise
    return out


async def compare(
    baseline: Path,
    rounds: int,
    streams: int,
    ttft_n: int,
    nonstream: int = 0,
    this_env: dict[str, str] | None = None,
) -> dict[str, Any]:
    upstream = Upstream.start()
    services: dict[str, Service] = {}
    figures: dict[str, Any] = {
        "load_average_at_start": os.getloadavg(),
        "reference_ms_at_start": reference_ms(),
        "this_env": this_env,
    }
    try:
        with tempfile.TemporaryDirectory(prefix="chat-bff-compare-") as tmp:
            services = await _services(upstream, baseline, Path(tmp), this_env or {})
            for svc in services.values():
                for t in (V1, CHAT):
                    await run_requests(
                        svc.port, [t.request(svc.port, 5, 0)] * 40, concurrency=4, marker=t.marker
                    )
            if ttft_n:
                figures.update(await _ttft(upstream, services, ttft_n))
            cpu: dict[str, list[float]] = {}
            for r in range(rounds):
                order = list(services.items())
                for name, svc in order if r % 2 == 0 else order[::-1]:
                    for t in (V1, CHAT):
                        if streams:
                            await _streams(cpu, name, svc, t, upstream, streams)
                        if nonstream:
                            await _nonstream(cpu, name, svc, t, upstream, nonstream)
                print(f"round {r + 1} of {rounds} done", file=sys.stderr, flush=True)
            for key, values in cpu.items():
                figures[key] = statistics.median(values)
                figures[key + " (rounds)"] = [round(v, 1) for v in values]
    finally:
        for svc in services.values():
            svc.stop()
        upstream.stop()
    figures["load_average_at_end"] = os.getloadavg()
    figures["reference_ms_at_end"] = reference_ms()
    return figures


async def _ttft(upstream: Upstream, services: dict[str, Service], n: int) -> dict[str, float]:
    """Added time to first token at one stream, taking turns request by request."""
    turns = [("direct", upstream.port, DIRECT)] + [
        (f"{name} {t.name}", svc.port, t) for name, svc in services.items() for t in (V1, CHAT)
    ]
    ttft = await one_at_a_time(
        [(name, p, [t.request(p, 5, 0)] * n, t.marker) for name, p, t in turns], n, 5
    )
    direct = ttft["direct"]["ttft_p50_ms"]
    return {
        f"{name} added TTFT p50 ms": col["ttft_p50_ms"] - direct
        for name, col in ttft.items()
        if name != "direct"
    }


async def _streams(
    out: dict[str, list[float]], name: str, svc: Service, t: Target, upstream: Upstream, n: int
) -> None:
    """`n` concurrent streams of 200 chunks: CPU per 1,000 chunks."""
    load = await measure(
        svc.port,
        [t.request(svc.port, 200, 0)] * n,
        concurrency=n,
        service=svc,
        upstream=upstream,
        marker=t.marker,
        expected_tokens=200,
    )
    out.setdefault(f"{name} {t.name} CPU ms / 1k chunks", []).append(
        load.summary()["cpu_ms_per_1k_chunks"]
    )


async def _nonstream(
    out: dict[str, list[float]], name: str, svc: Service, t: Target, upstream: Upstream, n: int
) -> None:
    """`n` non-streaming requests (20 chunks upstream) at concurrency 50, as `bench.run`."""
    load = await measure(
        svc.port,
        [t.request(svc.port, 20, 0, stream=False)] * n,
        concurrency=50,
        service=svc,
        upstream=upstream,
    )
    summary = load.summary()
    if summary["failed"]:
        raise RuntimeError(f"{name} {t.name}: {summary['failed']} non-streaming requests failed")
    if summary["service_cpu_ms"] is not None and summary["requests"]:
        cpu_ms = summary["service_cpu_ms"] / summary["requests"]
        out.setdefault(f"{name} {t.name} CPU ms / request", []).append(cpu_ms)
    out.setdefault(f"{name} {t.name} requests/s", []).append(summary["requests_per_s"] or 0.0)


def report(figures: dict[str, Any]) -> str:
    goals = {
        "CPU ms / 1k chunks": GOALS["cpu_ms_per_1k"],
        "added TTFT p50 ms": GOALS["added_ttft_p50_ms_1"],
        "CPU ms / request": GOALS["nonstream_cpu_ms"],
        "requests/s": GOALS["nonstream_requests_per_s"],
    }
    lines = [f"{'':34}{'baseline':>10}{'this':>10}{'ratio':>8}{'goal':>8}  result"]
    for metric, goal in goals.items():
        for wire in ("v1", "chat"):
            base = figures.get(f"baseline {wire} {metric}")
            this = figures.get(f"this {wire} {metric}")
            if base is None or this is None:
                continue
            ratio = f"{this / base:.2f}" if base > 0 else "-"
            ok = this >= goal if metric == "requests/s" else this <= goal
            verdict = "PASS" if ok else "FAIL"
            lines.append(
                f"{wire + ' ' + metric:34}{base:10.2f}{this:10.2f}{ratio:>8}{goal:8.1f}  {verdict}"
            )
    start, end = figures["load_average_at_start"][0], figures["load_average_at_end"][0]
    lines.append(f"load average at start {start:.1f}, at end {end:.1f}")
    if "reference_ms_at_end" in figures:
        lines.append(
            f"reference loop {figures['reference_ms_at_start']} ms at start, "
            f"{figures['reference_ms_at_end']} ms at end (bench.processes.reference_ms)"
        )
    if figures.get("this_env"):
        lines.append(f"this tree's worker ran with {figures['this_env']}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, required=True, help="another checkout")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--streams", type=int, default=100, help="concurrent 200-chunk streams (0: none)"
    )
    parser.add_argument("--ttft-n", type=int, default=100, help="TTFT requests (0: none)")
    parser.add_argument(
        "--nonstream",
        type=int,
        default=0,
        metavar="N",
        help="also N non-streaming requests at concurrency 50 per build and round",
    )
    parser.add_argument(
        "--this-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="environment for this tree's worker only (e.g. PYTHONMALLOC=malloc, with "
        "--baseline naming this same tree: one setting side by side)",
    )
    args = parser.parse_args()
    this_env = dict(item.split("=", 1) for item in args.this_env)
    if not (args.baseline / "app" / "main.py").exists():
        sys.exit(f"{args.baseline} is not a chat-bff checkout")
    figures = asyncio.run(
        compare(
            args.baseline.resolve(),
            args.rounds,
            args.streams,
            args.ttft_n,
            args.nonstream,
            this_env,
        )
    )
    print(report(figures))
    for key, value in figures.items():
        if key.endswith("(rounds)"):
            print(f"{key}: {value}")


if __name__ == "__main__":
    main()
