"""The `memory` scenario: RSS of one chat-bff worker against the number of open streams.

    python -m bench.memory [--counts 1000,5000] [--seconds 20]

For each count N: a fresh worker (SQLite, one uvicorn worker) is warmed up, its RSS read
(`before`); N slowly paced `/v1/chat/completions` streams are opened together (the
upstream sends one chunk every 100 ms, so each stream stays open for the whole window)
and RSS is read once every stream has delivered its first token, or after `--seconds`
on a machine too busy for that (`open`: the cost of N open streams, per stream in KB;
the row says how many were streaming); then the client hangs up on all of them and RSS is read
again after a short settle (`after`, against `before`). Everything targets 127.0.0.1 and
ends within about twice `--seconds` per count. Goals (issue 12): at most 50 KB per open stream, back
within 10% of `before` after they close.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.client import Conn, open_conns
from bench.measure import V1
from bench.processes import Upstream, catalogue, start_service, status_kb

DELAY_MS = 100
GOAL_KB_PER_STREAM = 50.0
GOAL_AFTER_RATIO = 1.10


def _rss_mb(pid: int) -> float:
    return status_kb(pid, "VmRSS") / 1024


async def _wait_first_tokens(conns: list[Conn], deadline: float) -> int:
    """How many streams delivered a token before the deadline (a stream counts once)."""
    while time.perf_counter() < deadline:
        started = sum(1 for c in conns if c._result.first_token_at is not None)
        if started == len(conns):
            return started
        await asyncio.sleep(0.2)
    return sum(1 for c in conns if c._result.first_token_at is not None)


async def one_count(upstream: Upstream, tmp: Path, count: int, seconds: float) -> dict[str, Any]:
    chunks = int(3 * seconds * 1000 / DELAY_MS)  # outlives the window
    service = await start_service(
        upstream=upstream,
        database_url=f"sqlite+aiosqlite:///{tmp / f'memory-{count}.db'}",
        models_json=catalogue([(chunks, DELAY_MS), (5, 0)]),
        app_spec=["app.main:app"],
        tag=f"mem-{count}",
    )
    try:
        warm = await open_conns(service.port, 20)
        await asyncio.gather(
            *(c.send(V1.request(service.port, 5, 0), marker=V1.marker) for c in warm)
        )
        for c in warm:
            c.close()
        await asyncio.sleep(1.0)
        before = _rss_mb(service.pid)
        began = time.perf_counter()
        conns = await open_conns(service.port, count)
        request = V1.request(service.port, chunks, DELAY_MS)
        for c in conns:
            c.send(request, marker=V1.marker)
        started = await _wait_first_tokens(conns, began + seconds)
        await asyncio.sleep(1.0)  # every open stream has buffers in flight now
        opened = _rss_mb(service.pid)
        peak_open = status_kb(service.pid, "VmHWM") / 1024
        for c in conns:
            c.close()
        await asyncio.gather(*(c.lost for c in conns))
        await asyncio.sleep(3.0)  # the server notices the hang-ups and lets the runs go
        after = _rss_mb(service.pid)
        return {
            "streams": count,
            "streaming_when_measured": started,
            "rss_before_mb": round(before, 1),
            "rss_open_mb": round(opened, 1),
            "rss_peak_mb": round(peak_open, 1),
            "rss_after_mb": round(after, 1),
            "kb_per_open_stream": round((opened - before) * 1024 / count, 1),
            "after_over_before": round(after / before, 3),
            "seconds": round(time.perf_counter() - began, 1),
        }
    finally:
        service.stop()


def report(rows: list[dict[str, Any]]) -> str:
    head = (
        f"{'open streams':>12} {'RSS before':>11} {'RSS open':>9} {'KB/stream':>10} "
        f"{'RSS after':>10} {'after/before':>13}"
    )
    lines = [head]
    for r in rows:
        per = r["kb_per_open_stream"]
        ratio = r["after_over_before"]
        ok_per = " ok" if per <= GOAL_KB_PER_STREAM else " !!"
        ok_ratio = " ok" if ratio <= GOAL_AFTER_RATIO else " !!"
        lines.append(
            f"{r['streams']:>12} {r['rss_before_mb']:>9.1f}MB {r['rss_open_mb']:>7.1f}MB "
            f"{per:>8.1f}{ok_per} {r['rss_after_mb']:>8.1f}MB {ratio:>10.3f}{ok_ratio}"
        )
    lines.append(
        f"goals: <= {GOAL_KB_PER_STREAM:.0f} KB per open stream; after/before <= {GOAL_AFTER_RATIO}"
    )
    return "\n".join(lines)


async def main_async(counts: list[int], seconds: float) -> list[dict[str, Any]]:
    upstream = Upstream.start()
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="chat-bff-memory-") as tmp:
            for count in counts:
                row = await one_count(upstream, Path(tmp), count, seconds)
                print(json.dumps(row), file=sys.stderr, flush=True)
                rows.append(row)
    finally:
        upstream.stop()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="1000,5000")
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    print(report(asyncio.run(main_async(counts, args.seconds))))


if __name__ == "__main__":
    main()
