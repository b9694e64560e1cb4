"""Instructions one request costs inside the worker, counted by callgrind (load-independent).

    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=/tmp/cg.%p \\
        .venv/bin/python -m bench.callgrind v1|chat|v1-nonstream|nonstream [--n 50]
    .venv/bin/python -m bench.callgrind v1 --cprofile      # where the time goes, no valgrind

Starts the fake upstream, builds the app in this process and drives it through ASGI (no
HTTP server, no client socket): `--warm` requests first, then `--n` more one at a time
(streams of 5 chunks, or non-streaming answers), with callgrind's instrumentation switched
on only around those (`callgrind_control -i on|off`); the usage rows' batched INSERT
and the heap trimmer (timers', not the request's) are held off while counting. Prints
the instructions it counted (also in the out file's `totals:` line). The count does not
move with the machine's load, though timing inside a run moves it by a few per cent:
compare builds over several runs, side by side.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.processes import Upstream, catalogue
from bench.sizes import PROMPT, model


def _environment(upstream: Upstream, db: Path) -> None:
    for key in list(os.environ):
        if key.startswith(("OPENAI_", "ANTHROPIC_", "JWT_", "RATE_LIMIT_", "DATABASE_URL")):
            del os.environ[key]
    os.environ.update(
        OPENAI_API_KEY="sk-bench",
        OPENAI_BASE_URL=f"http://127.0.0.1:{upstream.port}/v1",
        DATABASE_URL=f"sqlite+aiosqlite:///{db}",
        LOG_LEVEL="WARNING",
        MODELS_JSON=catalogue([(5, 0), (20, 0)]),
        DEFAULT_MODEL=model(5, 0),
        RATE_LIMIT_REQUESTS_PER_MINUTE="0",
        RATE_LIMIT_CONCURRENT_RUNS="0",
        EXAMPLE_TOOLS_ENABLED="false",
    )


def _scope(path: str, length: int) -> dict[str, Any]:
    headers = [
        (b"host", b"127.0.0.1:8000"),
        (b"content-type", b"application/json"),
        (b"accept", b"application/json"),
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


async def _one(app: Any, path: str, body: bytes) -> int:
    """One request through the app; the status, once the response's last body went out."""
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
        elif message["type"] == "http.response.body" and not (
            message.get("more_body") or done.done()
        ):
            done.set_result(None)

    task = asyncio.ensure_future(app(_scope(path, len(body)), receive, send))
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


async def drive(kind: str, n: int, warm: int, profile: Path | None) -> None:
    from app.main import create_app
    from app.observability import memory

    # The heap trimmer's 30 s timer would fall inside or outside the count by how slow the
    # run is (valgrind: minutes): off, like the usage rows' timer below.
    memory.Trimmer.start = lambda self: None  # type: ignore[method-assign]

    path = "/v1/chat/completions" if kind.startswith("v1") else "/api/chat"
    stream = not kind.endswith("nonstream")
    payload = {"model": model(5 if stream else 20, 0), "messages": PROMPT, "stream": stream}
    body = json.dumps(payload, separators=(",", ":")).encode()
    app = create_app()
    async with app.router.lifespan_context(app):
        for _ in range(warm):
            assert await _one(app, path, body) == 200
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
        for _ in range(n):
            await _one(app, path, body)
        _toggle(False)
        if profiler is not None and profile is not None:
            profiler.disable()
            profiler.dump_stats(profile)
    print(f"{kind}: {n} requests after {warm} to warm up")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", choices=["v1", "chat", "v1-nonstream", "nonstream"])
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--warm", type=int, default=30)
    parser.add_argument("--cprofile", type=Path, help="write cProfile stats here instead")
    args = parser.parse_args()
    upstream = Upstream.start()
    tmp = Path(tempfile.mkdtemp(prefix="chat-bff-callgrind-"))
    try:
        _environment(upstream, tmp / "cg.db")
        if args.cprofile is not None:
            os.environ["BENCH_CALLGRIND_OFF"] = "1"
        try:
            import uvloop

            runner: Any = uvloop.run
        except ImportError:
            runner = asyncio.run
        runner(drive(args.kind, args.n, args.warm, args.cprofile))
    finally:
        upstream.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
