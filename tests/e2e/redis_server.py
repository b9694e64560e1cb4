"""A Redis server of a test's own, for faults the shared one must not suffer: stopped
(SIGSTOP: it keeps accepting connections but answers nothing, as a hung Redis does),
continued, or killed.

    with own_redis() as redis:
        settings = {"REDIS_URL": redis.url}
        redis.hang(); ...; redis.resume()

It may also ask for a password (`own_redis(password=...)`: `redis.url_with(password)`),
or be a Redis that restarted and is still loading its data (`loading_redis()`: every
command is answered LOADING for the rest of the test).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from tests.e2e.conftest import free_port


@dataclass
class OwnRedis:
    proc: subprocess.Popen[bytes]
    port: int

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def url_with(self, password: str) -> str:
        return f"redis://:{password}@127.0.0.1:{self.port}/0"

    def hang(self) -> None:
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.proc.pid, signal.SIGCONT)


@contextmanager
def own_redis(*, password: str | None = None) -> Iterator[OwnRedis]:
    with _server(["--requirepass", password] if password else []) as server:
        _wait_for(redis.Redis(port=server.port, password=password, socket_timeout=1))
        yield server


@contextmanager
def loading_redis(tmp: Path) -> Iterator[OwnRedis]:
    """A Redis that reads back a data set slowly enough (a delay per key) to answer
    LOADING for a minute or so; the test ends it before."""
    data = ["--dir", str(tmp), "--dbfilename", "dump.rdb"]
    with _server(data) as writer:
        client = redis.Redis(port=writer.port, socket_timeout=5)
        _wait_for(client)
        with client.pipeline() as pipe:
            for i in range(10_000):  # incompressible, so loading pauses to answer often
                pipe.set(f"k{i}", os.urandom(100))
            pipe.execute()
        client.save()
        client.close()
    slow = ["--key-load-delay", "5000", "--loading-process-events-interval-bytes", "1024"]
    with _server([*data, *slow]) as server:
        client = redis.Redis(port=server.port, socket_timeout=1)
        for _ in range(200):
            try:
                client.ping()
            except redis.exceptions.BusyLoadingError:
                break
            except redis.exceptions.ConnectionError:
                time.sleep(0.02)
        else:
            raise RuntimeError("the test's Redis did not start loading")
        client.close()
        yield server


@contextmanager
def _server(args: list[str]) -> Iterator[OwnRedis]:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed")
    port = free_port()
    base = ["--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen(
        [binary, *base, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    server = OwnRedis(proc, port)
    try:
        yield server
    finally:
        server.resume()
        proc.kill()
        proc.wait(5)


def _wait_for(client: redis.Redis) -> None:
    try:
        for _ in range(200):
            try:
                client.ping()
                return
            except redis.exceptions.ConnectionError:
                time.sleep(0.02)
        raise RuntimeError("the test's Redis did not start")
    finally:
        client.close()
