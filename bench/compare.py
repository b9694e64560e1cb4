"""Two builds of chat-bff side by side in one run: `python -m bench.compare --baseline DIR`.

DIR is another checkout of the project (a worktree of main, say). Both services run
under uvicorn as `bench.run` starts them (one worker, each from its own tree, the same
interpreter and packages), against one fake upstream. Time to first token at one stream
takes turns request by request across direct, baseline and this tree; CPU per 1,000
chunks alternates the two builds round by round, so the load other work puts on the
machine weighs on both alike. Medians over the rounds, the ratio this tree / baseline,
and PASS/FAIL for this tree against the streaming goals (issue 12).
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
from bench.measure import CHAT, DIRECT, V1, measure, one_at_a_time
from bench.processes import Service, Upstream, catalogue, start_service
from bench.sizes import GOALS, ROOT


async def _services(upstream: Upstream, baseline: Path, tmp: Path) -> dict[str, Service]:
    models_json = catalogue([(5, 0), (200, 0)])
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
                start_limit_s=120.0,  # a loaded machine starts slowly
            )
    except BaseException:
        for started in out.values():  # the other one failed: leave no process behind
            started.stop()
        raise
    return out


async def compare(baseline: Path, rounds: int, streams: int, ttft_n: int) -> dict[str, Any]:
    upstream = Upstream.start()
    services: dict[str, Service] = {}
    figures: dict[str, Any] = {"load_average_at_start": os.getloadavg()}
    try:
        with tempfile.TemporaryDirectory(prefix="chat-bff-compare-") as tmp:
            services = await _services(upstream, baseline, Path(tmp))
            for svc in services.values():
                for t in (V1, CHAT):
                    await run_requests(
                        svc.port, [t.request(svc.port, 5, 0)] * 40, concurrency=4, marker=t.marker
                    )
            turns = [("direct", upstream.port, DIRECT)] + [
                (f"{name} {t.name}", svc.port, t)
                for name, svc in services.items()
                for t in (V1, CHAT)
            ]
            ttft = await one_at_a_time(
                [(n, p, [t.request(p, 5, 0)] * ttft_n, t.marker) for n, p, t in turns], ttft_n, 5
            )
            direct = ttft["direct"]["ttft_p50_ms"]
            for name, col in ttft.items():
                if name != "direct":
                    figures[f"{name} added TTFT p50 ms"] = col["ttft_p50_ms"] - direct
            cpu: dict[str, list[float]] = {}
            for r in range(rounds):
                order = list(services.items())
                for name, svc in order if r % 2 == 0 else order[::-1]:
                    for t in (V1, CHAT):
                        load = await measure(
                            svc.port,
                            [t.request(svc.port, 200, 0)] * streams,
                            concurrency=streams,
                            service=svc,
                            upstream=upstream,
                            marker=t.marker,
                            expected_tokens=200,
                        )
                        summary = load.summary()
                        key = f"{name} {t.name} CPU ms / 1k chunks"
                        cpu.setdefault(key, []).append(summary["cpu_ms_per_1k_chunks"])
                print(f"round {r + 1} of {rounds} done", file=sys.stderr, flush=True)
            for key, values in cpu.items():
                figures[key] = statistics.median(values)
                figures[key + " (rounds)"] = [round(v, 1) for v in values]
    finally:
        for svc in services.values():
            svc.stop()
        upstream.stop()
    figures["load_average_at_end"] = os.getloadavg()
    return figures


def report(figures: dict[str, Any]) -> str:
    goals = {
        "CPU ms / 1k chunks": GOALS["cpu_ms_per_1k"],
        "added TTFT p50 ms": GOALS["added_ttft_p50_ms_1"],
    }
    lines = [f"{'':34}{'baseline':>10}{'this':>10}{'ratio':>8}{'goal':>8}  result"]
    for metric, goal in goals.items():
        for wire in ("v1", "chat"):
            base = figures.get(f"baseline {wire} {metric}")
            this = figures.get(f"this {wire} {metric}")
            if base is None or this is None:
                continue
            ratio = f"{this / base:.2f}" if base > 0 else "-"
            verdict = "PASS" if this <= goal else "FAIL"
            lines.append(
                f"{wire + ' ' + metric:34}{base:10.2f}{this:10.2f}{ratio:>8}{goal:8.1f}  {verdict}"
            )
    start, end = figures["load_average_at_start"][0], figures["load_average_at_end"][0]
    lines.append(f"load average at start {start:.1f}, at end {end:.1f}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, required=True, help="another checkout")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--streams", type=int, default=100, help="concurrent 200-chunk streams")
    parser.add_argument("--ttft-n", type=int, default=100)
    args = parser.parse_args()
    if not (args.baseline / "app" / "main.py").exists():
        sys.exit(f"{args.baseline} is not a chat-bff checkout")
    figures = asyncio.run(compare(args.baseline.resolve(), args.rounds, args.streams, args.ttft_n))
    print(report(figures))
    for key, value in figures.items():
        if key.endswith("(rounds)"):
            print(f"{key}: {value}")


if __name__ == "__main__":
    main()
