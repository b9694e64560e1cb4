"""A reader that stops reading costs the service tens of kilobytes, however long the run
it asked for: the backlog goes out in bounded pieces that each wait for the socket."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import Launch, openai_backed
from tests.fakes.openai_upstream import Completion, FakeOpenAIUpstream

pytestmark = pytest.mark.e2e

# A 3.5 MB answer in 3,500 deltas: its replay, and its message_end alone, dwarf any buffer.
ANSWER = ["x" * 1023 + " " for _ in range(3500)]
READERS = 40


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def stalled_reader(port: int, url: str) -> socket.socket:
    """Ask for the events, then never read a byte (a small receive window)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(f"GET {url} HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n".encode())
    return sock


async def test_stalled_readers_of_a_long_finished_run_cost_tens_of_kilobytes_each(
    launch: Launch, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(Completion(text=ANSWER))
    service = launch(**openai_backed(openai_upstream.base_url))
    assert service.proc is not None
    async with httpx.AsyncClient(base_url=service.base_url, timeout=30) as http:
        cid = (await http.post("/api/conversations", json={})).json()["id"]
        started = await http.post(f"/api/conversations/{cid}/messages", json={"content": "Go"})
        url = started.json()["events_url"]
        for _ in range(200):
            if (await http.get(f"/api/conversations/{cid}")).json()["active_run_id"] is None:
                break
            await asyncio.sleep(0.05)
        whole = await http.get(url)  # one full read: what every reader will ask for
        assert whole.status_code == 200
        assert len(whole.content) > 7_000_000  # the deltas and the message_end
    await asyncio.sleep(0.5)
    before = rss_kib(service.proc.pid)

    readers = [stalled_reader(service.port, url) for _ in range(READERS)]
    await asyncio.sleep(3.0)  # every reader's socket is full; the server waits on them
    after = rss_kib(service.proc.pid)
    for sock in readers:
        sock.close()

    per_reader = (after - before) / READERS
    print(f"RSS {before} -> {after} KiB with {READERS} stalled readers: {per_reader:.0f} KiB each")
    assert per_reader < 150
