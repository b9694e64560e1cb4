"""Many open upstream streams through the provider alone: `python -m bench.pool`.

    python -m bench.pool --streams 5000            # our transport (app/providers/transport.py)
    python -m bench.pool --streams 5000 --sdk-pool # the SDK's default httpx client

One process: the OpenAI provider (the real SDK) against the fake upstream (`bench.upstream`,
its own process), N streams of 12 chunks paced 5 s apart, started 400 a second (as
`bench.memory` ramps them) and all held open to their end. It prints how many delivered a
first token, how many failed (and why), the wall time and this process's CPU. No chat-bff
server, so it measures the upstream side only: the connection pool and the SDK's request.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import subprocess
import sys
import time

import httpx2
import openai

from app.domain.messages import Message
from app.domain.stream import ModelRequest
from app.providers.openai import OpenAIProvider
from app.providers.pool import pool_limits


async def run(streams: int, sdk_pool: bool) -> None:
    upstream = subprocess.Popen(
        [sys.executable, "-m", "bench.upstream"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert upstream.stdout is not None
    port = int(upstream.stdout.readline().split()[1])
    timeout = httpx2.Timeout(60, connect=10)
    client = (
        openai.DefaultAsyncHttpxClient(timeout=timeout, limits=pool_limits(streams + 100))
        if sdk_pool
        else None
    )
    provider = OpenAIProvider(
        api_key="bench",
        base_url=f"http://127.0.0.1:{port}/v1",
        timeout=60,
        connect_timeout=10,
        max_retries=0,
        max_connections=streams + 100,
        http_client=client,
    )
    request = ModelRequest(model="bench-c12-d5000", messages=[Message(role="user", content="hi")])
    first: list[float] = []
    errors: list[BaseException] = []
    started = time.monotonic()

    async def one() -> None:
        got = False
        try:
            async for _ in provider.stream(request):
                if not got:
                    first.append(time.monotonic() - started)
                    got = True
        except Exception as exc:  # counted and shown; the bench goes on
            errors.append(exc)

    cpu = time.process_time()
    tasks = []
    for n in range(streams):
        tasks.append(asyncio.create_task(one()))
        if n % 40 == 39:
            await asyncio.sleep(0.1)
    await asyncio.wait(tasks, timeout=600)
    print(
        f"{'SDK pool' if sdk_pool else 'our pool'}: {streams} streams, {len(first)} delivered "
        f"a first token, {len(errors)} failed, wall {time.monotonic() - started:.1f} s, "
        f"CPU {time.process_time() - cpu:.1f} s"
    )
    if errors:
        print(f"first failure: {errors[0]!r} from {errors[0].__cause__!r}")
    await provider.aclose()
    upstream.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=5000)
    parser.add_argument("--sdk-pool", action="store_true", help="the SDK's default client")
    args = parser.parse_args()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    asyncio.run(run(args.streams, args.sdk_pool))


if __name__ == "__main__":
    main()
