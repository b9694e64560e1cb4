"""The chat-bff benchmark: `python -m bench.run [--quick]` (a script, not a test).

Side by side in one run, against the same fake OpenAI upstream (`bench.upstream`, its own
process on 127.0.0.1): a direct connection to the upstream vs chat-bff's
`/v1/chat/completions` and `/api/chat` streams (issue 2), and a persisted conversation run
vs the stateless `/api/chat` stream on SQLite and on Postgres (issue 3). chat-bff is a real
`uvicorn` process (one worker); the load generator (`bench.client`) is this process.

CPU is the chat-bff process's own utime+stime from /proc/<pid>/stat over the measured
window, nothing subtracted. On a 2-core machine the upstream and the load generator
share the cores with it; their CPU is reported too. Figures are printed as one table and
written to bench/results.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.client import Result, get, open_conns, post, run_requests

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results.json"
PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
PROMPT = [{"role": "user", "content": "Say something."}]
NATIVE_MARK = b"event: text_delta"
OPENAI_MARK = b"zq"
CLK_TCK = os.sysconf("SC_CLK_TCK")

GOALS = {
    "cpu_ms_per_1k": 60.0,
    "chunks_per_s": 15_000.0,
    "added_ttft_p50_ms_1": 2.0,
    "gap_p99_over_direct_ms": 10.0,
    "idle_rss_mb": 120.0,
    "startup_s": 2.0,
    "persisted_cpu_ratio": 1.5,
    "db_writes_per_50_chunks": 1.0,
}


@dataclass(frozen=True)
class Size:
    startups: int
    ttft_n: int
    streams: int
    chunks: int
    paced_chunks: int
    nonstream_n: int
    persisted_runs: int
    persisted_chunks: int
    persisted_concurrency: int
    persisted_ttft_n: int


FULL = Size(
    startups=3,
    ttft_n=100,
    streams=200,
    chunks=200,
    paced_chunks=200,
    nonstream_n=2000,
    persisted_runs=40,
    persisted_chunks=500,
    persisted_concurrency=20,
    persisted_ttft_n=30,
)
QUICK = Size(
    startups=1,
    ttft_n=30,
    streams=200,
    chunks=50,
    paced_chunks=60,
    nonstream_n=400,
    persisted_runs=16,
    persisted_chunks=200,
    persisted_concurrency=8,
    persisted_ttft_n=10,
)


def model(chunks: int, delay_ms: int) -> str:
    return f"bench-c{chunks}-d{delay_ms}"


# --- processes --------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def status_kb(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def has_module(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


@dataclass
class Upstream:
    proc: subprocess.Popen[str]
    port: int

    @classmethod
    def start(cls) -> Upstream:
        proc = subprocess.Popen(
            [sys.executable, "-m", "bench.upstream"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        line = proc.stdout.readline().split()
        if len(line) != 2 or line[0] != "PORT":
            proc.kill()
            raise RuntimeError(f"fake upstream did not start: {line}")
        return cls(proc, int(line[1]))

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


@dataclass
class Service:
    proc: subprocess.Popen[bytes]
    port: int
    startup_s: float
    idle_rss_mb: float
    server: str
    log: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def uvicorn_flags() -> list[str]:
    flags = []
    if has_module("uvloop"):
        flags += ["--loop", "uvloop"]
    if has_module("httptools"):
        flags += ["--http", "httptools"]
    return flags


def catalogue(shapes: Sequence[tuple[int, int]]) -> str:
    models = [
        {"id": model(c, d), "provider": "openai", "upstream_model": model(c, d)}
        for c, d in sorted(set(shapes))
    ]
    return json.dumps(models)


async def http_status(port: int, path: str) -> int:
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return 0
    try:
        writer.write(f"GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n".encode())
        line = await asyncio.wait_for(reader.readline(), 5)
        return int(line.split()[1]) if line else 0
    finally:
        writer.close()


async def start_service(
    *, upstream: Upstream, database_url: str, models_json: str, app_spec: list[str], tag: str
) -> Service:
    port = free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "ANTHROPIC_", "JWT_", "RATE_LIMIT_", "DATABASE_URL"))
    }
    first_model = json.loads(models_json)[0]["id"]
    env.update(
        OPENAI_API_KEY="sk-bench",
        OPENAI_BASE_URL=f"http://127.0.0.1:{upstream.port}/v1",
        DATABASE_URL=database_url,
        LOG_LEVEL="WARNING",
        MODELS_JSON=models_json,
        DEFAULT_MODEL=first_model,
        # One local user drives hundreds of streams: the per-caller limits would refuse
        # them (429), which is not what is measured here.
        RATE_LIMIT_REQUESTS_PER_MINUTE="0",
        RATE_LIMIT_CONCURRENT_RUNS="0",
        EXAMPLE_TOOLS_ENABLED="false",
    )
    flags = uvicorn_flags()
    args = [
        sys.executable,
        "-m",
        "uvicorn",
        *app_spec,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
        "--log-level",
        "warning",
        "--no-access-log",
        *flags,
    ]
    log = Path(tempfile.gettempdir()) / f"chat-bff-bench-{tag}-{os.getpid()}.log"
    started = time.perf_counter()
    with log.open("wb") as out:
        proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    deadline = started + 30
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"chat-bff exited during start-up; see {log}")
        if await http_status(port, "/healthz") == 200:
            break
        if time.perf_counter() > deadline:
            proc.kill()
            raise RuntimeError(f"chat-bff did not answer /healthz within 30 s; see {log}")
        await asyncio.sleep(0.01)
    startup = time.perf_counter() - started
    await asyncio.sleep(0.3)
    rss = status_kb(proc.pid, "VmRSS") / 1024
    server = "uvicorn " + (" ".join(flags) if flags else "(default loop and http)")
    return Service(proc, port, startup, rss, server, log)


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
    request, so that whatever else the machine is doing weighs on all of them alike."""
    conns = {name: (await open_conns(port, 1))[0] for name, port, _, _ in targets}
    results: dict[str, list[Result]] = {name: [] for name, _, _, _ in targets}
    started = time.perf_counter()
    for n in range(rounds):
        for name, _, requests, marker in targets:
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


# --- issue 2: streaming overhead --------------------------------------------------------


async def issue2(size: Size, upstream: Upstream, tmp: Path, log: Any) -> dict[str, Any]:
    shapes = [(5, 0), (5, 5), (size.chunks, 0), (size.paced_chunks, 5), (20, 0)]
    models_json = catalogue(shapes)
    out: dict[str, Any] = {"startup": []}
    service: Service | None = None
    for n in range(size.startups):
        if service is not None:
            service.stop()
        db = tmp / f"issue2-{n}.db"
        service = await start_service(
            upstream=upstream,
            database_url=f"sqlite+aiosqlite:///{db}",
            models_json=models_json,
            app_spec=["app.main:app"],
            tag=f"i2-{n}",
        )
        out["startup"].append({"startup_s": service.startup_s, "idle_rss_mb": service.idle_rss_mb})
        log(f"start-up {n + 1}: {service.startup_s:.2f} s, idle RSS {service.idle_rss_mb:.1f} MB")
    assert service is not None
    out["server"] = service.server
    try:
        targets = [(DIRECT, upstream.port), (V1, service.port), (CHAT, service.port)]

        def svc_for(t: Target) -> Service | None:
            return None if t.direct else service

        # warm-up: first requests import and build lazily
        for t, port in targets:
            await run_requests(port, [t.request(port, 5, 0)] * 20, concurrency=4, marker=t.marker)

        for delay in (0, 5):
            key = f"ttft1_d{delay}"
            out[key] = await one_at_a_time(
                [
                    (t.name, port, [t.request(port, 5, delay)] * size.ttft_n, t.marker)
                    for t, port in targets
                ],
                size.ttft_n,
                5,
            )
            log(f"TTFT at 1 stream, {delay} ms pacing: done")

        out["saturated"] = {}
        for t, port in targets:
            load = await measure(
                port,
                [t.request(port, size.chunks, 0)] * size.streams,
                concurrency=size.streams,
                service=svc_for(t),
                upstream=upstream,
                marker=t.marker,
                expected_tokens=size.chunks,
            )
            out["saturated"][t.name] = load.summary()
            log(f"{size.streams} streams x {size.chunks} chunks, 0 ms pacing, {t.name}: done")

        out["paced"] = {}
        for t, port in targets:
            load = await measure(
                port,
                [t.request(port, size.paced_chunks, 5)] * size.streams,
                concurrency=size.streams,
                service=svc_for(t),
                upstream=upstream,
                marker=t.marker,
                gaps=True,
                expected_tokens=size.paced_chunks,
            )
            out["paced"][t.name] = load.summary()
            log(f"{size.streams} streams x {size.paced_chunks} chunks, 5 ms pacing, {t.name}: done")

        out["nonstream"] = {}
        for t, port in targets:
            load = await measure(
                port,
                [t.request(port, 20, 0, stream=False)] * size.nonstream_n,
                concurrency=50,
                service=svc_for(t),
                upstream=upstream,
            )
            out["nonstream"][t.name] = load.summary()
        log("non-streaming at concurrency 50: done")
        out["peak_rss_mb"] = status_kb(service.pid, "VmHWM") / 1024
    finally:
        service.stop()
    return out


# --- issue 3: persisted runs ------------------------------------------------------------


async def sql_counts(port: int) -> dict[str, int]:
    results, _ = await run_requests(
        port, [get("/__bench/sql", port=port)], concurrency=1, capture=True
    )
    data: dict[str, int] = results[0].json()
    return data


def delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0)}


WRITE_VERBS = ("INSERT", "UPDATE", "DELETE", "REPLACE", "UPSERT")


async def create_conversations(port: int, count: int, chunks: int) -> list[str]:
    body = {"title": "bench", "model": model(chunks, 0)}
    requests = [post("/api/conversations", body, port=port)] * count
    results, _ = await run_requests(port, requests, concurrency=min(8, count), capture=True)
    ids = []
    for r in results:
        if r.status not in (200, 201):
            raise RuntimeError(f"could not create a conversation: {r.status} {r.body[:300]!r}")
        ids.append(str(r.json()["id"]))
    return ids


def send_requests(port: int, ids: Sequence[str], chunks: int) -> list[bytes]:
    body = {"content": "Say something.", "model": model(chunks, 0)}
    return [
        post(f"/api/conversations/{cid}/messages", body, port=port, accept="text/event-stream")
        for cid in ids
    ]


async def db_batches(database_url: str, title: str) -> tuple[int, int, int]:
    """From the database itself: (runs, run_events rows, distinct insert batches) of the
    runs of the conversations titled `title`. Each `append_many` batch shares one `created_at`."""
    query = (
        "SELECT count(DISTINCT e.run_id), count(*), count(DISTINCT e.run_id || '/' || "
        "CAST(e.created_at AS TEXT)) FROM run_events e JOIN runs r ON r.id = e.run_id "
        "WHERE r.conversation_id IN (SELECT id FROM conversations WHERE title = $1)"
    )
    if database_url.startswith("sqlite"):
        path = database_url.split("///", 1)[1]
        with contextlib.closing(sqlite3.connect(path)) as conn:
            row = conn.execute(query.replace("$1", "?"), (title,)).fetchone()
        return int(row[0]), int(row[1]), int(row[2])
    import asyncpg  # type: ignore[import-untyped]

    conn = await asyncpg.connect(database_url.replace("+asyncpg", ""))
    try:
        row = await conn.fetchrow(query, title)
    finally:
        await conn.close()
    return int(row[0]), int(row[1]), int(row[2])


async def issue3_on(
    size: Size, upstream: Upstream, database_url: str, tag: str, log: Any
) -> dict[str, Any]:
    c = size.persisted_chunks
    models_json = catalogue([(c, 0), (5, 0)])
    service = await start_service(
        upstream=upstream,
        database_url=database_url,
        models_json=models_json,
        app_spec=["bench.instrumented:create", "--factory"],
        tag=f"i3-{tag}",
    )
    port = service.port
    out: dict[str, Any] = {"startup_s": service.startup_s, "idle_rss_mb": service.idle_rss_mb}
    try:
        # warm-up both paths
        warm = await create_conversations(port, 4, 5)
        await run_requests(port, send_requests(port, warm, 5), concurrency=4, marker=NATIVE_MARK)
        await run_requests(port, [CHAT.request(port, 5, 0)] * 8, concurrency=4, marker=NATIVE_MARK)

        # time to first token, one stream at a time
        ids = await create_conversations(port, size.persisted_ttft_n, 5)
        n = size.persisted_ttft_n
        ttft = await one_at_a_time(
            [
                ("stateless", port, [CHAT.request(port, 5, 0)] * n, NATIVE_MARK),
                ("persisted", port, send_requests(port, ids, 5), NATIVE_MARK),
            ],
            n,
            5,
        )
        out["ttft1"] = ttft

        # CPU and statements under load; conversations are created before the window
        title = f"bench-{tag}-{uuid.uuid4().hex[:8]}"
        body = {"title": title, "model": model(c, 0)}
        created, _ = await run_requests(
            port,
            [post("/api/conversations", body, port=port)] * size.persisted_runs,
            concurrency=8,
            capture=True,
        )
        ids = [str(r.json()["id"]) for r in created]
        before = await sql_counts(port)
        persisted = await measure(
            port,
            send_requests(port, ids, c),
            concurrency=size.persisted_concurrency,
            service=service,
            upstream=upstream,
            marker=NATIVE_MARK,
            expected_tokens=c,
        )
        # The last batch and the run's end are written before `run_end` is sent, so the
        # counts are complete once every stream has ended.
        after = await sql_counts(port)
        stmts = delta(after, before) if after else {}
        tokens = persisted.tokens or 1
        total = stmts.get("statements", 0)
        writes = sum(v for k, v in stmts.items() if k.removeprefix("verb:") in WRITE_VERBS)
        runs, rows, batches = await db_batches(database_url, title)
        persisted.extra = {
            "sql": stmts,
            "statements_per_1k_chunks": total / tokens * 1000,
            "writes_per_50_chunks": writes / tokens * 50,
            "commits_per_50_chunks": stmts.get("commits", 0) / tokens * 50,
            "writes_per_run": writes / max(1, len(ids)),
            "statements_per_run": total / max(1, len(ids)),
            "db_runs": runs,
            "db_event_rows": rows,
            "db_event_batches": batches,
            "db_event_batches_per_50_chunks": batches / tokens * 50,
        }
        before = await sql_counts(port)
        stateless = await measure(
            port,
            [CHAT.request(port, c, 0)] * size.persisted_runs,
            concurrency=size.persisted_concurrency,
            service=service,
            upstream=upstream,
            marker=NATIVE_MARK,
            expected_tokens=c,
        )
        after = await sql_counts(port)
        stmts = delta(after, before)
        stateless.extra = {
            "sql": stmts,
            "statements_per_1k_chunks": stmts.get("statements", 0) / (stateless.tokens or 1) * 1000,
            "writes_per_50_chunks": 0.0,
        }
        out["load"] = {"stateless": stateless.summary(), "persisted": persisted.summary()}
        log(f"persisted vs stateless on {tag}: done")
    finally:
        service.stop()
    return out


@contextlib.asynccontextmanager
async def postgres_database() -> Any:
    import asyncpg

    name = f"chatbff_bench_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    admin = await asyncpg.connect(PG_ADMIN_URL, timeout=5)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    try:
        yield f"postgresql+asyncpg://postgres@127.0.0.1:5432/{name}"
    finally:
        admin = await asyncpg.connect(PG_ADMIN_URL, timeout=5)
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()


async def issue3(size: Size, upstream: Upstream, tmp: Path, log: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    out["sqlite"] = await issue3_on(
        size, upstream, f"sqlite+aiosqlite:///{tmp / 'issue3.db'}", "sqlite", log
    )
    try:
        async with postgres_database() as url:
            out["postgres"] = await issue3_on(size, upstream, url, "postgres", log)
    except (OSError, ImportError) as exc:
        out["postgres"] = {"skipped": f"Postgres not reachable on 127.0.0.1:5432 ({exc})"}
        log(out["postgres"]["skipped"])
    return out


# --- the table --------------------------------------------------------------------------


def fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def verdict(ok: bool | None) -> str:
    return "-" if ok is None else ("PASS" if ok else "FAIL")


def per(cols: dict[str, dict[str, Any]], key: str) -> list[Any]:
    return [cols.get(name, {}).get(key) for name in ("direct", "v1", "chat")]


def judge(values: Sequence[Any], ok: Any) -> str:
    """PASS/FAIL for the two chat-bff columns (v1, chat)."""
    marks = []
    for label, value in zip(("v1", "chat"), values, strict=True):
        marks.append(f"{label} {verdict(None if value is None else bool(ok(value)))}")
    return ", ".join(marks)


def table(results: dict[str, Any]) -> str:
    rows: list[list[str]] = []
    i2, i3 = results["issue2"], results["issue3"]

    def section(title: str, headers: Sequence[str]) -> None:
        rows.append([f"== {title}", *headers])

    def add(label: str, values: Sequence[Any], goal: str = "", check: str = "", d: int = 1) -> None:
        rows.append([label, *(fmt(v, d) for v in values), goal, check])

    section(
        "issue 2: direct vs chat-bff", ["direct", "/v1/chat/compl.", "/api/chat", "goal", "result"]
    )
    starts = [s["startup_s"] for s in i2["startup"]]
    rss = [s["idle_rss_mb"] for s in i2["startup"]]
    startup = pct(starts, 50)
    idle = pct(rss, 50)
    add(
        f"start-up s (median of {len(starts)})",
        ["", startup, startup],
        "< 2 s",
        verdict(startup is not None and startup < GOALS["startup_s"]),
        2,
    )
    add(
        "idle RSS MB",
        ["", idle, idle],
        "< 120 MB",
        verdict(idle is not None and idle < GOALS["idle_rss_mb"]),
    )
    for delay in (0, 5):
        cols = i2[f"ttft1_d{delay}"]
        p50 = per(cols, "ttft_p50_ms")
        p99 = per(cols, "ttft_p99_ms")
        add(f"TTFT p50 ms, 1 stream, {delay} ms pacing", p50, d=2)
        added = [None if v is None or p50[0] is None else v - p50[0] for v in p50]
        add(
            "  added TTFT p50 ms",
            ["", *added[1:]],
            "<= 2 ms",
            judge(added[1:], lambda v: v <= 2.0),
            2,
        )
        add(f"TTFT p99 ms, 1 stream, {delay} ms pacing", p99, d=2)
        add(
            "  added TTFT p99 ms",
            ["", *(None if v is None or p99[0] is None else v - p99[0] for v in p99[1:])],
            d=2,
        )
    streams = i2["saturated"]["direct"]["requests"]
    sat = i2["saturated"]
    add(f"{streams} streams, 0 ms: chunks/s", per(sat, "chunks_per_s"), "", "", 0)
    add(
        "  chunks/s goal",
        ["", *per(sat, "chunks_per_s")[1:]],
        ">= 15,000",
        judge(per(sat, "chunks_per_s")[1:], lambda v: v >= GOALS["chunks_per_s"]),
        0,
    )
    cpu = per(sat, "cpu_ms_per_1k_chunks")
    add(
        "  chat-bff CPU ms / 1k chunks",
        ["", *cpu[1:]],
        "<= 60",
        judge(cpu[1:], lambda v: v <= 60),
    )
    add("  TTFT p50 ms", per(sat, "ttft_p50_ms"))
    add("  TTFT p99 ms", per(sat, "ttft_p99_ms"))
    add(
        "  upstream CPU ms / client CPU ms",
        [f"{fmt(c['upstream_cpu_ms'], 0)} / {fmt(c['client_cpu_ms'], 0)}" for c in sat.values()],
    )
    add("  failed / short streams", [f"{c['failed']} / {c['short_streams']}" for c in sat.values()])
    paced = i2["paced"]
    add(f"{streams} streams, 5 ms: chunks/s", per(paced, "chunks_per_s"), d=0)
    cpu = per(paced, "cpu_ms_per_1k_chunks")
    add("  chat-bff CPU ms / 1k chunks", ["", *cpu[1:]], "<= 60", judge(cpu[1:], lambda v: v <= 60))
    add("  TTFT p50 ms", per(paced, "ttft_p50_ms"))
    add("  TTFT p99 ms", per(paced, "ttft_p99_ms"))
    gaps = per(paced, "gap_p99_ms")
    add("  inter-chunk gap p50 ms", per(paced, "gap_p50_ms"), d=2)
    add("  inter-chunk gap p99 ms", gaps, d=2)
    add("  inter-chunk gap max ms", per(paced, "gap_max_ms"), d=2)
    add("  tokens per read (1 = no bursts)", per(paced, "tokens_per_read"), d=2)
    over = [None if v is None or gaps[0] is None else v - gaps[0] for v in gaps[1:]]
    add("  gap p99 over direct ms", ["", *over], "<= 10 ms", judge(over, lambda v: v <= 10), 2)
    add(
        "  failed / short streams",
        [f"{c['failed']} / {c['short_streams']}" for c in paced.values()],
    )
    ns = i2["nonstream"]
    add("non-streaming req/s, concurrency 50", per(ns, "requests_per_s"), d=0)
    add(
        "  chat-bff CPU ms / request",
        [
            "",
            *(
                None
                if c.get("service_cpu_ms") is None
                else c["service_cpu_ms"] / max(1, c["requests"])
                for name, c in ns.items()
                if name != "direct"
            ),
        ],
        d=2,
    )
    add("  failed", [c["failed"] for c in ns.values()])

    dbs = [k for k in ("sqlite", "postgres") if "load" in i3.get(k, {})]
    headers = [f"{db} {kind}" for db in dbs for kind in ("stateless", "persisted")]
    section("issue 3: persisted run vs stateless /api/chat", [*headers, "goal", "result"])

    def cols3(part: str, key: str) -> list[Any]:
        return [i3[db][part][kind].get(key) for db in dbs for kind in ("stateless", "persisted")]

    def pad(values: list[Any]) -> list[Any]:
        return (values + [""] * len(headers))[: len(headers)]

    if dbs:
        load0 = i3[dbs[0]]["load"]["persisted"]
        add(
            f"runs x chunks, concurrency {results['size']['persisted_concurrency']}",
            pad([f"{load0['requests']} x {results['size']['persisted_chunks']}"] * len(headers)),
        )
        cpu3 = cols3("load", "cpu_ms_per_1k_chunks")
        ratios = [cpu3[i + 1] / cpu3[i] if cpu3[i] else None for i in range(0, len(cpu3), 2)]
        add("CPU ms / 1k chunks", pad(cpu3))
        add(
            "  persisted / stateless CPU",
            pad([x for r in ratios for x in ("", r)]),
            "<= 1.5x",
            " ".join(
                f"{db} {verdict(r is not None and r <= 1.5)}"
                for db, r in zip(dbs, ratios, strict=True)
            ),
            2,
        )
        extra = [
            x
            for db in dbs
            for x in (
                "",
                (
                    i3[db]["load"]["persisted"]["service_cpu_ms"]
                    - i3[db]["load"]["stateless"]["service_cpu_ms"]
                )
                / max(1, i3[db]["load"]["persisted"]["requests"]),
            )
        ]
        add("  extra CPU ms per persisted run", pad(extra))
        add("chunks/s", pad(cols3("load", "chunks_per_s")), d=0)
        add("DB statements / 1k chunks", pad(cols3("load", "statements_per_1k_chunks")), d=2)
        wr = cols3("load", "writes_per_50_chunks")
        add(
            "DB writes / 50 chunks",
            pad(wr),
            "<= 1",
            " ".join(
                f"{db} {verdict(wr[2 * i + 1] is not None and wr[2 * i + 1] <= 1.0)}"
                for i, db in enumerate(dbs)
            ),
            2,
        )
        add("  write statements per run", pad(cols3("load", "writes_per_run")))
        add("  all statements per run", pad(cols3("load", "statements_per_run")))
        add("DB commits / 50 chunks", pad(cols3("load", "commits_per_50_chunks")), d=2)
        add(
            "  run_events rows / batches (DB side)",
            pad(
                [
                    x
                    for db in dbs
                    for x in (
                        "",
                        f"{i3[db]['load']['persisted'].get('db_event_rows')} / "
                        f"{i3[db]['load']['persisted'].get('db_event_batches')}",
                    )
                ]
            ),
        )
        add(
            "  event batches / 50 chunks (DB side)",
            pad(cols3("load", "db_event_batches_per_50_chunks")),
            d=2,
        )
        t50 = cols3("ttft1", "ttft_p50_ms")
        add("TTFT p50 ms, 1 stream", pad(t50), d=2)
        add(
            "  added vs stateless p50 ms",
            pad(
                [
                    x
                    for i in range(0, len(t50), 2)
                    for x in (
                        "",
                        None if t50[i] is None or t50[i + 1] is None else t50[i + 1] - t50[i],
                    )
                ]
            ),
            d=2,
        )
        add("TTFT p99 ms, 1 stream", pad(cols3("ttft1", "ttft_p99_ms")), d=2)
        add(
            "  failed / short",
            pad(
                [
                    f"{i3[db]['load'][k]['failed']} / {i3[db]['load'][k]['short_streams']}"
                    for db in dbs
                    for k in ("stateless", "persisted")
                ]
            ),
        )
    for db in ("sqlite", "postgres"):
        if "skipped" in i3.get(db, {}):
            rows.append([f"{db}: {i3[db]['skipped']}", "", "", "", "", ""])

    blocks: list[list[list[str]]] = []
    for r in rows:
        if r[0].startswith("==") or not blocks:
            blocks.append([])
        blocks[-1].append(r)
    lines: list[str] = []
    for block in blocks:
        ncols = max(len(r) for r in block)
        widths = [max(len(r[i]) if i < len(r) else 0 for r in block) for i in range(ncols)]
        lines.append("")
        for r in block:
            cells = (r + [""] * ncols)[:ncols]
            lines.append(
                "  ".join(
                    (c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]))
                    for i, c in enumerate(cells)
                ).rstrip()
            )
    return "\n".join(lines)


# --- main -------------------------------------------------------------------------------


def environment(server: str) -> dict[str, Any]:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "server": server,
        "git_commit": commit,
        "client": "bench.client, asyncio Protocols"
        + (" on uvloop" if has_module("uvloop") else ""),
        "load_average_at_end": os.getloadavg(),
    }


@contextlib.contextmanager
def scratch() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="chat-bff-bench-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


async def main_async(quick: bool, only: str | None) -> dict[str, Any]:
    size = QUICK if quick else FULL
    began = time.perf_counter()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - began:6.1f}s] {message}", file=sys.stderr, flush=True)

    upstream = Upstream.start()
    results: dict[str, Any] = {"quick": quick, "size": size.__dict__, "goals": GOALS}
    # Other work on the machine skews wall-clock figures (CPU per chunk much less): say so.
    results["load_average_at_start"] = os.getloadavg()
    try:
        with scratch() as tmp:
            results["issue2"] = await issue2(size, upstream, tmp, log) if only != "3" else {}
            results["issue3"] = await issue3(size, upstream, tmp, log) if only != "2" else {}
    finally:
        upstream.stop()
    results["environment"] = environment(results["issue2"].get("server", " ".join(uvicorn_flags())))
    results["elapsed_s"] = round(time.perf_counter() - began, 1)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller counts (~1 minute)")
    parser.add_argument("--only", choices=["2", "3"], help="run one issue's part only")
    args = parser.parse_args()
    runner = asyncio.run
    if has_module("uvloop"):
        import uvloop

        runner = uvloop.run
    results = runner(main_async(args.quick, args.only))
    RESULTS.write_text(json.dumps(results, indent=2, default=str) + "\n")
    if args.only is None:
        print(table(results))
    else:
        print(json.dumps(results, indent=2, default=str))
    env = results["environment"]
    print(
        f"\n{env['server']}, Python {env['python']}, {env['cpus']} CPUs, commit "
        f"{env['git_commit']}; {results['elapsed_s']} s; load average at start "
        f"{results['load_average_at_start'][0]:.1f}, at end {env['load_average_at_end'][0]:.1f}; "
        f"written to {RESULTS.relative_to(ROOT)}"
    )


if __name__ == "__main__":
    main()
