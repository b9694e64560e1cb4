"""The processes a benchmark runs: the fake upstream and chat-bff under uvicorn; their CPU, RSS."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.sizes import CLK_TCK, ROOT, model

# --- processes --------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def reference_ms() -> float:
    """CPU ms of a fixed pure-Python loop (the fastest of three): how fast this machine's
    cores are right now. On a shared virtual machine the same loop has taken 140 to 245 ms
    within one minute at a load average under 1, so absolute CPU figures from different
    runs compare only alongside this one; ratios within a run are unaffected."""
    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        total = 0
        for i in range(2_000_000):
            total += i
        best = min(best, time.process_time() - started)
    return round(best * 1000, 1)


def status_kb(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def compile_bytecode(root: Path) -> None:
    """Byte-compile the service's own modules, as an installed wheel or image already is.

    With PYTHONDONTWRITEBYTECODE set (as it is on some CI machines), every start would
    otherwise compile about 270 modules from source, a quarter of a second of CPU that no
    deployment pays; compileall skips modules whose bytecode is current.
    """
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(root / "app")],
        check=True,
        env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
    )


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
    # CPU the process spent until /healthz answered: unlike the wall time, other work on
    # the machine barely moves it.
    startup_cpu_s: float = 0.0

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


LEAN_PROTOCOL = "app.api.http_protocol:LeanHttpToolsProtocol"


def uvicorn_flags(root: Path = ROOT) -> list[str]:
    """uvloop and httptools where installed; httptools as the Dockerfile serves it (its
    lean protocol class), or uvicorn's own where `root` (another checkout) predates it."""
    flags = []
    if has_module("uvloop"):
        flags += ["--loop", "uvloop"]
    if has_module("httptools"):
        lean = (root / LEAN_PROTOCOL.split(":")[0].replace(".", "/")).with_suffix(".py")
        flags += ["--http", LEAN_PROTOCOL if lean.exists() else "httptools"]
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
    *,
    upstream: Upstream,
    database_url: str,
    models_json: str,
    app_spec: list[str],
    tag: str,
    workers: int = 1,
    port: int | None = None,
    settings: dict[str, str] | None = None,
    start_limit_s: float = 30.0,
    root: Path = ROOT,
    module: str = "uvicorn",
) -> Service:
    port = port or free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "ANTHROPIC_", "JWT_", "RATE_LIMIT_", "DATABASE_URL"))
    }
    env.setdefault("PYTHONMALLOC", "malloc")  # as the Dockerfile and dev.py serve run it
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
    env.update(settings or {})
    compile_bytecode(root)
    flags = uvicorn_flags(root)
    args = [
        sys.executable,
        "-m",
        module,
        *app_spec,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--log-level",
        "warning",
        "--no-access-log",
        *flags,
    ]
    log = Path(tempfile.gettempdir()) / f"chat-bff-bench-{tag}-{os.getpid()}.log"
    started = time.perf_counter()
    with log.open("wb") as out:
        proc = subprocess.Popen(args, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT)
    deadline = started + start_limit_s
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"chat-bff exited during start-up; see {log}")
        if await http_status(port, "/healthz") == 200:
            break
        if time.perf_counter() > deadline:
            proc.kill()
            raise RuntimeError(
                f"chat-bff did not answer /healthz within {start_limit_s:.0f} s; see {log}"
            )
        await asyncio.sleep(0.01)
    startup = time.perf_counter() - started
    startup_cpu = cpu_seconds(proc.pid)
    await asyncio.sleep(0.3)
    rss = status_kb(proc.pid, "VmRSS") / 1024
    server = "uvicorn " + (" ".join(flags) if flags else "(default loop and http)")
    return Service(proc, port, startup, rss, server, log, startup_cpu)
