"""The `memory` scenario: RSS of one chat-bff worker against the number of open streams.

    python -m bench.memory [--counts 1000,5000] [--pace-ms MS] [--seconds N]
    python -m bench.memory --soak 600 [--soak-streams 1000]
    python -m bench.memory --counts 200 --probe /tmp/probe   # what the objects are
    python -m bench.memory --counts 5000 --worker-cpus 0 [--root DIR]  # a worker on one CPU

For each count N: a fresh worker (SQLite, one uvicorn worker) is warmed up, its RSS read
(`before`); N slowly paced `/v1/chat/completions` streams are opened (400 more a second:
all 5,000 in one instant kept one worker on 2 shared cores busy past the upstream
timeouts; the
upstream sends one chunk every `--pace-ms`, so each stream stays open for the whole
window) and RSS is read once every stream has delivered its first token, or after
`--seconds` on a machine too busy for that (`open`: the cost of N open streams, per
stream in KB; the row says how many were streaming); then the client hangs up on all of
them, and once the worker's `/metrics` shows no stream or run left, RSS is read again
when it has stopped moving (`after`, against `before`).

`--soak S`: one worker under steady load for S seconds: `--soak-streams` connections,
each streaming answers of 30 chunks at `--pace-ms` one after another (runs start and end
all the time), RSS sampled every 10 s. Flat means the RSS at the end is within 5% of the
RSS at minute 2 (after the warm-up of the load); the slope over that span is reported.

The pace is the point: an open stream that waits for its model is what holds memory, and
at 100 ms per chunk 5,000 streams are 50,000 chunks/s, more than one worker delivers, so
RSS would measure the backlog, not the streams (and at 1 s, 5,000 streams still outran one
worker on 2 shared cores until reads hit the upstream timeout). By default all N streams
together get 1,000 chunks a second: one every max(1, N / 1000) s per stream.
The worker runs with `PYTHONMALLOC=malloc`, as the Dockerfile and `dev.py serve` start
it; `--pythonmalloc pymalloc` runs it on CPython's own small-object allocator instead
(see the README: what returns after a burst). File limits are raised to the hard limit
for the client, the upstream and the worker. Everything targets 127.0.0.1 and ends within
about twice the window per count (the soak: its length).

`--worker-cpus 0` pins the worker (not the client or the upstream) to those CPUs: with a
busy loop pinned there beside it (`taskset -c 0 python -c 'while True: pass'`), the worker
gets half a core, whatever else the machine runs on its other cores; how one worker copes
with a fraction of a core is what decides whether its upstream connects keep up. `--root
DIR` runs the worker from another checkout (the bench, client and upstream stay this
tree's): two such runs started together, each pinned to the same CPU, compare two builds
under the same starvation.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import signal
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.client import Conn, open_conns
from bench.measure import V1
from bench.processes import Service, Upstream, catalogue, cpu_seconds, start_service, status_kb
from bench.sizes import ROOT

CHUNKS_PER_S = 1000  # all streams together: the pace is N / 1000 s, at least 1 s
GOAL_KB_PER_STREAM = 50.0
GOAL_AFTER_RATIO = 1.10
GOAL_SOAK_RATIO = 1.05
SOAK_CHUNKS = 30
SOAK_SAMPLE_S = 10.0
SOAK_FROM_S = 120.0
RAMP_PER_S = 400  # new streams a second: 5,000 at once starved the worker past its timeouts
TRIM_PERIOD_S = 30.0  # app.observability.memory.Trimmer's check


def raise_fd_limit() -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # children inherit it
    return hard


def _rss_mb(pid: int) -> float:
    return status_kb(pid, "VmRSS") / 1024


def _streaming(conns: list[Conn]) -> int:
    return sum(1 for c in conns if c._result.first_token_at is not None)


async def _wait_first_tokens(conns: list[Conn], deadline: float) -> int:
    """How many streams delivered a token before the deadline (a stream counts once)."""
    while time.perf_counter() < deadline and _streaming(conns) < len(conns):
        await asyncio.sleep(0.2)
    return _streaming(conns)


def _still_open(port: int) -> int:
    """Streams and runs the worker still holds (its `/metrics` gauges); -1 if unreadable."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            text = r.read().decode()
    except OSError:
        return -1
    held = 0
    for line in text.splitlines():
        if line.startswith(("chatbff_active_streams ", "chatbff_active_runs ")):
            held += int(float(line.split()[1]))
    return held


async def _closed(port: int, limit_s: float) -> float:
    """Seconds until the worker has let every stream and run go (at most `limit_s`): on a
    starved worker 5,000 closes took longer than the two trim periods `_settled_rss`
    waits, and RSS, which moves only at a trim, read as settled before they were done."""
    began = time.perf_counter()
    while time.perf_counter() < began + limit_s:
        if await asyncio.to_thread(_still_open, port) == 0:
            break
        await asyncio.sleep(1.0)
    return time.perf_counter() - began


async def _settled_rss(pid: int, limit_s: float) -> float:
    """RSS once it has not moved by more than 1% over 5 s (the server lets the runs go
    and writes their usage), after two periods of the worker's heap trim (one may fall
    while the server is still letting the streams go: the trim that returns what they
    freed is the next one), or at `limit_s`."""
    began = time.perf_counter()
    samples = [_rss_mb(pid)]
    while time.perf_counter() < began + limit_s:
        await asyncio.sleep(1.0)
        samples.append(_rss_mb(pid))
        last = samples[-6:]
        if time.perf_counter() - began < 2 * TRIM_PERIOD_S + 2:
            continue
        if len(last) == 6 and max(last) - min(last) <= 0.01 * max(last):
            break
    return samples[-1]


class Probe:
    """`--probe DIR`: the worker runs under `bench.traced`; each `take` writes its
    object census (`DIR/snap-<n>.json`) before RSS is read."""

    def __init__(self, directory: Path | None) -> None:
        self.dir = directory
        self.taken = 0

    @property
    def module(self) -> str:
        return "uvicorn" if self.dir is None else "bench.traced"

    async def take(self, pid: int) -> None:
        if self.dir is None:
            return
        os.kill(pid, signal.SIGUSR1)
        done = self.dir / f"snap-{self.taken}.done"
        while not done.exists():
            await asyncio.sleep(0.2)
        self.taken += 1


async def _start(
    upstream: Upstream, tmp: Path, tag: str, chunks: int, pace: int, args: argparse.Namespace
) -> Service:
    settings = {"PROVIDER_MAX_CONNECTIONS": str(max(args.max_count + 100, 1000))}
    if args.pythonmalloc:
        settings["PYTHONMALLOC"] = args.pythonmalloc
    if args.probe is not None:
        settings["BENCH_TRACE_DIR"] = str(args.probe)
    service = await start_service(
        upstream=upstream,
        database_url=f"sqlite+aiosqlite:///{tmp / f'memory-{tag}.db'}",
        models_json=catalogue([(chunks, pace), (5, 0)]),
        app_spec=["app.main:app"],
        tag=f"mem-{tag}",
        settings=settings,
        module=Probe(args.probe).module,
        start_limit_s=60.0,
        root=args.root,
    )
    if args.worker_cpus:
        os.sched_setaffinity(service.pid, args.worker_cpus)
    return service


async def _warm(service: Service) -> None:
    warm = await open_conns(service.port, 20)
    await asyncio.gather(*(c.send(V1.request(service.port, 5, 0), marker=V1.marker) for c in warm))
    for c in warm:
        c.close()
    await asyncio.sleep(1.0)


async def one_count(
    upstream: Upstream, tmp: Path, count: int, args: argparse.Namespace
) -> dict[str, Any]:
    args.pace_ms = args.pace or max(1000, count * 1000 // CHUNKS_PER_S)
    window = args.seconds if args.seconds is not None else 20.0 + 0.03 * count
    chunks = int(3 * window * 1000 / args.pace_ms) + 10  # outlives the window
    service = await _start(upstream, tmp, str(count), chunks, args.pace_ms, args)
    probe = Probe(args.probe)
    try:
        await _warm(service)
        await probe.take(service.pid)
        before = _rss_mb(service.pid)
        began = time.perf_counter()
        cpu_began = cpu_seconds(service.pid)
        conns = await open_conns(service.port, count)
        request = V1.request(service.port, chunks, args.pace_ms)
        for start in range(0, count, RAMP_PER_S // 4):  # a ramp, not one instant
            for c in conns[start : start + RAMP_PER_S // 4]:
                c.send(request, marker=V1.marker)
            await asyncio.sleep(0.25)
        started = await _wait_first_tokens(conns, began + window)
        opened_s = time.perf_counter() - began
        await asyncio.sleep(2 * args.pace_ms / 1000)  # every open stream has buffers in flight
        await probe.take(service.pid)
        opened = _rss_mb(service.pid)
        peak_open = status_kb(service.pid, "VmHWM") / 1024
        for c in conns:
            c.close()
        await asyncio.gather(*(c.lost for c in conns))
        closing_s = await _closed(service.port, 120.0 + 0.03 * count)
        after = await _settled_rss(service.pid, 90.0 + 0.01 * count)
        await probe.take(service.pid)
        return {
            "streams": count,
            "pace_ms": args.pace_ms,
            "pythonmalloc": args.pythonmalloc,
            "streaming_when_measured": started,
            "seconds_to_open": round(opened_s, 1),
            "rss_before_mb": round(before, 1),
            "rss_open_mb": round(opened, 1),
            "rss_peak_mb": round(peak_open, 1),
            "rss_after_mb": round(after, 1),
            "kb_per_open_stream": round((opened - before) * 1024 / count, 1),
            "after_over_before": round(after / before, 3),
            "seconds_to_close": round(closing_s, 1),
            "seconds": round(time.perf_counter() - began, 1),
            "load_average": os.getloadavg(),
            "worker_cpus": sorted(args.worker_cpus),
            "worker_cpu_s": round(cpu_seconds(service.pid) - cpu_began, 1),
            "root": str(args.root),
        }
    finally:
        service.stop()


async def soak(upstream: Upstream, tmp: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Steady load for `args.soak` seconds; RSS every 10 s."""
    args.pace_ms = args.pace or max(1000, args.soak_streams * 1000 // CHUNKS_PER_S)
    service = await _start(upstream, tmp, "soak", SOAK_CHUNKS, args.pace_ms, args)
    try:
        await _warm(service)
        before = _rss_mb(service.pid)
        conns = await open_conns(service.port, args.soak_streams)
        request = V1.request(service.port, SOAK_CHUNKS, args.pace_ms)
        stop = time.perf_counter() + args.soak
        answers = failures = 0

        async def worker(conn: Conn) -> None:
            nonlocal answers, failures
            await asyncio.sleep(args.pace_ms / 1000 * (id(conn) % 97) / 97)  # spread starts
            while time.perf_counter() < stop:
                result = await conn.send(request, marker=V1.marker)
                if result.error is not None or result.status != 200:
                    failures += 1
                    return
                answers += 1

        began = time.perf_counter()
        workers = [asyncio.ensure_future(worker(c)) for c in conns]
        samples: list[tuple[float, float]] = []
        while time.perf_counter() < stop:
            await asyncio.sleep(SOAK_SAMPLE_S)
            samples.append((round(time.perf_counter() - began, 1), round(_rss_mb(service.pid), 1)))
            print(f"soak {samples[-1][0]:>6.0f} s  RSS {samples[-1][1]:.1f} MB", file=sys.stderr)
        await asyncio.wait(workers, timeout=SOAK_CHUNKS * args.pace_ms / 1000 + 30)
        for c in conns:
            c.close()
        return _soak_row(before, samples, answers, failures, args)
    finally:
        service.stop()


def _soak_row(
    before: float,
    samples: list[tuple[float, float]],
    answers: int,
    failures: int,
    args: argparse.Namespace,
) -> dict[str, Any]:
    span = [(t, r) for t, r in samples if t >= SOAK_FROM_S] or samples
    base = span[0][1]
    end = sum(r for _, r in span[-3:]) / len(span[-3:])
    n = len(span)
    mean_t = sum(t for t, _ in span) / n
    mean_r = sum(r for _, r in span) / n
    var = sum((t - mean_t) ** 2 for t, _ in span)
    slope = sum((t - mean_t) * (r - mean_r) for t, r in span) / var if var else 0.0
    return {
        "soak_seconds": args.soak,
        "streams": args.soak_streams,
        "pace_ms": args.pace_ms,
        "pythonmalloc": args.pythonmalloc,
        "answers": answers,
        "failures": failures,
        "rss_before_mb": round(before, 1),
        "rss_at_2min_mb": base,
        "rss_end_mb": round(end, 1),
        "rss_max_mb": max(r for _, r in samples),
        "end_over_2min": round(end / base, 3),
        "slope_mb_per_min": round(slope * 60, 2),
        "samples": samples,
        "load_average": os.getloadavg(),
    }


def report(rows: list[dict[str, Any]]) -> str:
    head = (
        f"{'open streams':>12} {'RSS before':>11} {'RSS open':>9} {'KB/stream':>10} "
        f"{'RSS after':>10} {'after/before':>13} {'streaming':>10} {'worker CPU':>11}"
    )
    lines = [head]
    for r in rows:
        if "soak_seconds" in r:
            ok = "PASS" if r["end_over_2min"] <= GOAL_SOAK_RATIO else "FAIL"
            lines.append(
                f"soak {r['soak_seconds']:.0f} s, {r['streams']} streams: RSS "
                f"{r['rss_at_2min_mb']:.1f} MB at 2 min -> {r['rss_end_mb']:.1f} MB at the end "
                f"({r['end_over_2min']:.3f}x, slope {r['slope_mb_per_min']:+.2f} MB/min, "
                f"max {r['rss_max_mb']:.1f} MB; {r['answers']} answers, {r['failures']} "
                f"failed): flat {ok}"
            )
            continue
        per = r["kb_per_open_stream"]
        ratio = r["after_over_before"]
        ok_per = " ok" if per <= GOAL_KB_PER_STREAM else " !!"
        ok_ratio = " ok" if ratio <= GOAL_AFTER_RATIO else " !!"
        lines.append(
            f"{r['streams']:>12} {r['rss_before_mb']:>9.1f}MB {r['rss_open_mb']:>7.1f}MB "
            f"{per:>8.1f}{ok_per} {r['rss_after_mb']:>8.1f}MB {ratio:>10.3f}{ok_ratio} "
            f"{r['streaming_when_measured']:>10} {r['worker_cpu_s']:>9.1f} s"
        )
    lines.append(
        f"goals: <= {GOAL_KB_PER_STREAM:.0f} KB per open stream; after/before <= "
        f"{GOAL_AFTER_RATIO}; soak end <= {GOAL_SOAK_RATIO}x of minute 2"
    )
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> list[dict[str, Any]]:
    upstream = Upstream.start()
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="chat-bff-memory-") as tmp:
            if args.soak:
                rows.append(await soak(upstream, Path(tmp), args))
            else:
                for count in args.count_list:
                    rows.append(await one_count(upstream, Path(tmp), count, args))
                    print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    finally:
        upstream.stop()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--counts", default="1000,5000")
    parser.add_argument("--pace-ms", type=int, default=0, help="default: N streams / 1000 s")
    parser.add_argument("--seconds", type=float, default=None, help="window to open them")
    parser.add_argument("--soak", type=float, default=0.0, help="seconds of steady load")
    parser.add_argument("--soak-streams", type=int, default=1000)
    parser.add_argument(
        "--pythonmalloc",
        default=os.environ.get("PYTHONMALLOC", "malloc"),
        help="PYTHONMALLOC for the worker (pymalloc: CPython's own allocator)",
    )
    parser.add_argument("--probe", type=Path, default=None, help="object census directory")
    parser.add_argument(
        "--worker-cpus",
        default="",
        help="pin the worker to these CPUs (comma-separated), e.g. beside a busy loop",
    )
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout the worker runs")
    args = parser.parse_args()
    args.pace = args.pace_ms
    args.worker_cpus = {int(c) for c in args.worker_cpus.split(",") if c.strip()}
    args.root = args.root.resolve()
    if not (args.root / "app" / "main.py").exists():
        parser.error(f"{args.root} is not a chat-bff checkout")
    args.count_list = [int(c) for c in args.counts.split(",")]
    args.max_count = args.soak_streams if args.soak else max(args.count_list)
    if args.probe is not None:
        args.probe.mkdir(parents=True, exist_ok=True)
    hard = raise_fd_limit()
    if 2 * args.max_count + 200 > hard:
        parser.error(
            f"{args.max_count} streams need ~{2 * args.max_count + 200} files; limit {hard}"
        )
    rows = asyncio.run(main_async(args))
    print(json.dumps(rows), file=sys.stderr)
    print(report(rows))


if __name__ == "__main__":
    main()
