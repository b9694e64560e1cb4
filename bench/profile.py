"""Where chat-bff spends its CPU under one benchmark load: py-spy on the real process.

    .venv/bin/pip install py-spy        # not a project dependency
    .venv/bin/python -m bench.profile KIND [--seconds 8]

Starts the fake upstream and chat-bff (as `bench.run` does), warms up, then samples the
service with `py-spy record --format raw` while driving the load, and prints the frames
with the most samples: self (where the CPU is) and inclusive (which call paths).
`chat`/`v1`: 50 concurrent streams of 200 chunks; `paced`/`v1-paced`: 100 concurrent
streams of 200 chunks paced 5 ms apart (each chunk its own read and write);
`nonstream`/`v1-nonstream`: non-streaming /api/chat or /v1/chat/completions at
concurrency 50; `single`: one 5-chunk stream at a time (the time-to-first-token path);
`persisted`: conversation runs of 500 chunks, 20 at a time, on SQLite.
Samples of idle threads (a thread pool worker waiting on its queue) are left out.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from bench.client import run_requests
from bench.measure import CHAT, V1
from bench.persisted import create_conversations, send_requests
from bench.processes import Upstream, catalogue, start_service
from bench.sizes import NATIVE_MARK

IDLE = ("Condition.wait", "Queue.get", "_connection_worker_thread (aiosqlite/core.py:59)")
_SITE = re.compile(r"\(/\S*?/site-packages/")


def summarize(raw: Path, top: int) -> str:
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = [_SITE.sub("(", f) for f in stack.split(";")]
        if any(marker in frames[-1] for marker in IDLE):
            continue
        n = int(count)
        total += n
        own[frames[-1]] += n
        for frame in set(frames):
            inclusive[frame] += n
    out = [f"{total} samples (idle threads left out)", "-- self"]
    out += [f"{100 * n / total:5.1f}%  {f}" for f, n in own.most_common(top)]
    out.append("-- inclusive (app, SDK, HTTP and DB frames)")
    keep = ("app/", "openai/", "httpx", "httpcore", "sse_starlette", "sqlalchemy", "aiosqlite")
    rows = [(f, n) for f, n in inclusive.most_common() if any(k in f for k in keep)]
    out += [f"{100 * n / total:5.1f}%  {f}" for f, n in rows[: top * 2]]
    return "\n".join(out)


async def profile(kind: str, seconds: float, top: int, keep: Path | None = None) -> None:
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(spy).exists():
        sys.exit("py-spy is not installed: .venv/bin/pip install py-spy")
    upstream = Upstream.start()
    tmp = Path(tempfile.mkdtemp(prefix="chat-bff-profile-"))
    service = None
    try:
        service = await start_service(
            upstream=upstream,
            database_url=f"sqlite+aiosqlite:///{tmp / 'profile.db'}",
            models_json=catalogue([(200, 0), (200, 5), (20, 0), (5, 0), (500, 0)]),
            app_spec=["app.main:app"],
            tag="profile",
            start_limit_s=120.0,  # a loaded machine starts slowly
        )
        port = service.port
        target = V1 if kind.startswith("v1") else CHAT
        if kind == "persisted":
            ids = await create_conversations(port, 400, 500)
            requests = send_requests(port, ids, 500)
            concurrency, marker = 20, NATIVE_MARK
        elif kind.endswith("nonstream"):
            requests = [target.request(port, 20, 0, stream=False)] * 100_000
            concurrency, marker = 50, b""
        elif kind == "single":
            requests = [target.request(port, 5, 0)] * 100_000
            concurrency, marker = 1, target.marker
        elif kind.endswith("paced"):
            requests = [target.request(port, 200, 5)] * 100_000
            concurrency, marker = 100, target.marker
        else:
            requests = [target.request(port, 200, 0)] * 100_000
            concurrency, marker = 50, target.marker
        await run_requests(port, requests[:20], concurrency=min(concurrency, 10), marker=marker)
        raw = tmp / "profile.txt"
        args = [spy, "record", "--pid", str(service.pid), "--format", "raw", "-o", str(raw)]
        args += ["--rate", "200", "--duration", str(int(seconds)), "--nonblocking"]
        recorder = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        await asyncio.sleep(0.5)
        results, wall = await run_requests(
            port,
            requests[20:],
            concurrency=concurrency,
            marker=marker,
            timeout=seconds - 1,
        )
        done = sum(1 for r in results if r.error is None and r.status == 200)
        _, err = recorder.communicate(timeout=seconds + 180)  # slow to write on a busy machine
        if not raw.exists():
            sys.exit(f"py-spy wrote nothing: {err.decode(errors='replace')[-500:]}")
        print(f"{kind}: {done} requests answered in {wall:.1f} s while sampling")
        print(summarize(raw, top))
        if keep is not None:
            shutil.copy(raw, keep)
    finally:
        if service is not None:
            service.stop()
        upstream.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "kind",
        choices=[
            *("chat", "v1", "paced", "v1-paced", "nonstream", "v1-nonstream"),
            *("single", "persisted"),
        ],
    )
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--keep", type=Path, help="also write py-spy's raw samples here")
    args = parser.parse_args()
    asyncio.run(profile(args.kind, args.seconds, args.top, args.keep))


if __name__ == "__main__":
    main()
