"""A Redis server of a test's own, for faults the shared one must not suffer: stopped
(SIGSTOP: it keeps accepting connections but answers nothing, as a hung Redis does),
continued, or killed.

    with own_redis() as redis:
        settings = {"REDIS_URL": redis.url}
        redis.hang(); ...; redis.resume()
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

    def hang(self) -> None:
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.proc.pid, signal.SIGCONT)


@contextmanager
def own_redis() -> Iterator[OwnRedis]:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed")
    port = free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    server = OwnRedis(proc, port)
    try:
        client = redis.Redis(port=port, socket_timeout=1)
        for _ in range(200):
            try:
                client.ping()
                break
            except redis.exceptions.ConnectionError:
                time.sleep(0.02)
        else:
            raise RuntimeError("the test's Redis did not start")
        client.close()
        yield server
    finally:
        server.resume()
        proc.kill()
        proc.wait(5)
