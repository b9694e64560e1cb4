"""Instructions one request costs inside the worker, counted by callgrind (load-independent).

    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=/tmp/cg.%p \\
        .venv/bin/python -m bench.callgrind v1|chat|v1-nonstream|nonstream [--n 50]
    .venv/bin/python -m bench.callgrind v1 --cprofile      # where the time goes, no valgrind
    .venv/bin/python -m bench.callgrind persisted --chunks 500 --n 20 [--postgres]
    .venv/bin/python -m bench.callgrind chat --chunks 500 --n 20   # its stateless stream
    .venv/bin/python -m bench.callgrind persisted --postgres --chunks 500 --n 30 --rusage

Starts the fake upstream, builds the app in this process and drives it through ASGI (no
HTTP server, no client socket): `--warm` requests first, then `--n` more one at a time
(streams of 5 chunks or `--chunks`, or non-streaming answers; `persisted`: a message
sent to a conversation created before the count, `POST /api/conversations/{id}/messages`
as an SSE stream, the same answer as `chat`'s), with callgrind's instrumentation switched
on only around those (`callgrind_control -i on|off`); the usage rows' batched INSERT
and the heap trimmer (timers', not the request's) are held off while counting. Prints
the instructions it counted (also in the out file's `totals:` line). The count does not
move with the machine's load, though timing inside a run moves it by a few per cent:
compare builds over several runs, side by side.

`--rusage` (no valgrind) prints what the count does not show, per request, from the
process's `getrusage` over the same window: user and system CPU, minor page faults and
voluntary context switches (a round trip to the database the loop sleeps on is one;
after it the loop runs on caches another process used). The CPU moves with the host's
load; the faults and switches do not.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.processes import Upstream, catalogue
from bench.sizes import PROMPT, model


def _environment(upstream: Upstream, database_url: str, chunks: int) -> None:
    for key in list(os.environ):
        if key.startswith(("OPENAI_", "ANTHROPIC_", "JWT_", "RATE_LIMIT_", "DATABASE_URL")):
            del os.environ[key]
    os.environ.update(
        OPENAI_API_KEY="sk-bench",
        OPENAI_BASE_URL=f"http://127.0.0.1:{upstream.port}/v1",
        DATABASE_URL=database_url,
        LOG_LEVEL="WARNING",
        MODELS_JSON=catalogue(sorted({(5, 0), (20, 0), (chunks, 0)})),
        DEFAULT_MODEL=model(5, 0),
        RATE_LIMIT_REQUESTS_PER_MINUTE="0",
        RATE_LIMIT_CONCURRENT_RUNS="0",
        EXAMPLE_TOOLS_ENABLED="false",
    )


def _scope(path: str, length: int, accept: bytes) -> dict[str, Any]:
    headers = [
        (b"host", b"127.0.0.1:8000"),
        (b"content-type", b"application/json"),
        (b"accept", accept),
        (b"content-length", str(length).encode()),
    ]
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 40000),
        "scheme": "http",
        "method": "POST",
        "root_path": "",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": headers,
        "state": {},
    }


async def _one(
    app: Any,
    path: str,
    body: bytes,
    accept: bytes = b"application/json",
    out: bytearray | None = None,
) -> int:
    """One request through the app; the status, once the response's last body went out
    (its bytes appended to `out` when given)."""
    done = asyncio.get_running_loop().create_future()
    sent = False
    status = 0

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done  # the client stays until the response ends
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            if out is not None:
                out.extend(message.get("body", b""))
            if not (message.get("more_body") or done.done()):
                done.set_result(None)

    task = asyncio.ensure_future(app(_scope(path, len(body), accept), receive, send))
    await done
    await task
    return status


def _toggle(on: bool) -> None:
    if os.environ.get("BENCH_CALLGRIND_OFF"):
        return
    tool = shutil.which("callgrind_control")
    if tool is None:
        return
    subprocess.run(
        [tool, "-i", "on" if on else "off", str(os.getpid())],
        check=False,
        stdout=subprocess.DEVNULL,
    )


async def _conversations(app: Any, count: int, chunks: int) -> list[str]:
    """Conversations to send to, created before the count (as `bench.run --only 3` does)."""
    body = json.dumps({"title": "callgrind", "model": model(chunks, 0)}).encode()
    ids = []
    for _ in range(count):
        out = bytearray()
        assert await _one(app, "/api/conversations", body, out=out) in (200, 201), bytes(out)
        ids.append(str(json.loads(out)["id"]))
    return ids


def _requests(kind: str, chunks: int) -> tuple[str, bytes, bytes]:
    """(path, body, accept) of one request of `kind`; `persisted`'s path has `{id}`."""
    if kind == "persisted":
        payload: dict[str, Any] = {"content": "Say something.", "model": model(chunks, 0)}
        return (
            "/api/conversations/{id}/messages",
            json.dumps(payload).encode(),
            b"text/event-stream",
        )
    path = "/v1/chat/completions" if kind.startswith("v1") else "/api/chat"
    stream = not kind.endswith("nonstream")
    payload = {"model": model(chunks if stream else 20, 0), "messages": PROMPT, "stream": stream}
    return path, json.dumps(payload, separators=(",", ":")).encode(), b"application/json"


def _rusage_line(before: Any, after: Any, n: int) -> str:
    """Per request: user and system CPU (ms), minor faults, voluntary context switches."""
    return (
        f"per request: user {(after.ru_utime - before.ru_utime) / n * 1000:.2f} ms"
        f"  sys {(after.ru_stime - before.ru_stime) / n * 1000:.2f} ms"
        f"  minor faults {(after.ru_minflt - before.ru_minflt) / n:.1f}"
        f"  voluntary switches {(after.ru_nvcsw - before.ru_nvcsw) / n:.1f}"
    )


async def drive(
    kind: str, n: int, warm: int, chunks: int, profile: Path | None, rusage: bool = False
) -> None:
    from app.main import create_app
    from app.observability import memory

    # The heap trimmer's 30 s timer would fall inside or outside the count by how slow the
    # run is (valgrind: minutes): off, like the usage rows' timer below.
    memory.Trimmer.start = lambda self: None  # type: ignore[method-assign]
    # Likewise a persisted run's event writer stores a batch after 1 s at the latest: under
    # valgrind a run takes seconds, so that timer would add batches the service does not
    # write (a 500-chunk answer is two: 256 events, then the rest with the run's end).
    from app.runs.writer import EventWriter

    defaults = EventWriter.__init__.__kwdefaults__
    assert defaults is not None
    defaults["max_delay"] = 3600.0

    path, body, accept = _requests(kind, chunks)
    app = create_app()
    async with app.router.lifespan_context(app):
        paths = [path] * (warm + n)
        if kind == "persisted":
            paths = [path.format(id=c) for c in await _conversations(app, warm + n, chunks)]
        for p in paths[:warm]:
            assert await _one(app, p, body, accept) == 200
        # The usage rows' batched INSERT runs on a 100 ms timer: how many batches fall in
        # the window depends on how slow the run is, so it stays out of the count.
        await app.state.services.usage._writer.flush()
        app.state.services.usage._writer._interval = 3600.0
        profiler = None
        if profile is not None:
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
        _toggle(True)
        before = resource.getrusage(resource.RUSAGE_SELF)
        for p in paths[warm:]:
            await _one(app, p, body, accept)
        after = resource.getrusage(resource.RUSAGE_SELF)
        _toggle(False)
        if profiler is not None and profile is not None:
            profiler.disable()
            profiler.dump_stats(profile)
    print(f"{kind}: {n} requests of {chunks} chunks after {warm} to warm up")
    if rusage:
        print(_rusage_line(before, after, n))


async def _on_postgres(upstream: Upstream, args: argparse.Namespace) -> None:
    from bench.persisted import postgres_database

    async with postgres_database() as url:
        _environment(upstream, url, args.chunks)
        await drive(args.kind, args.n, args.warm, args.chunks, args.cprofile, args.rusage)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", choices=["v1", "chat", "v1-nonstream", "nonstream", "persisted"])
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--warm", type=int, default=30)
    parser.add_argument("--chunks", type=int, default=5, help="chunks a streamed answer")
    parser.add_argument(
        "--postgres", action="store_true", help="a scratch Postgres database, not SQLite"
    )
    parser.add_argument("--cprofile", type=Path, help="write cProfile stats here instead")
    parser.add_argument(
        "--rusage", action="store_true", help="print CPU, faults and switches per request"
    )
    args = parser.parse_args()
    upstream = Upstream.start()
    tmp = Path(tempfile.mkdtemp(prefix="chat-bff-callgrind-"))
    try:
        if args.cprofile is not None or args.rusage:
            os.environ["BENCH_CALLGRIND_OFF"] = "1"
        try:
            import uvloop

            runner: Any = uvloop.run
        except ImportError:
            runner = asyncio.run
        if args.postgres:
            runner(_on_postgres(upstream, args))
        else:
            _environment(upstream, f"sqlite+aiosqlite:///{tmp / 'cg.db'}", args.chunks)
            runner(drive(args.kind, args.n, args.warm, args.chunks, args.cprofile, args.rusage))
    finally:
        upstream.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
