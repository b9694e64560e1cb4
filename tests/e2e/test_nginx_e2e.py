"""Two instances behind Debian's nginx (its `proxy_params` plus the README's SSE lines),
round-robin, so consecutive requests land on alternate instances: a conversation created on
one, its message sent to the other, its events read and resumed through both, a cancel on
whichever, and the per-user run limit held across both. Skipped without nginx."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import Launch, free_port
from tests.e2e.test_instances_e2e import shared
from tests.e2e.test_resume_e2e import LONG, assert_gap_free, read_events, start_run, text_of
from tests.fakes.openai_upstream import Completion, FakeOpenAIUpstream
from tests.support.required import unavailable

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"

# What the README asks of a proxy in front of chat-bff (SSE); the rest is Debian's default.
CONFIG = """
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{}}
http {{
    access_log off;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    upstream chat_bff {{
{servers}
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            include /etc/nginx/proxy_params;
            proxy_pass http://chat_bff;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
            proxy_read_timeout 1h;
        }}
    }}
}}
"""


@pytest.fixture
def nginx(tmp_path: Path) -> Iterator[tuple[int, list[int]]]:
    """(nginx's port, its upstream ports): start the instances on the upstream ports."""
    if not Path(NGINX).exists():
        unavailable("nginx is not installed (apt-get install nginx-light)")
    port, upstreams = free_port(), [free_port(), free_port()]
    servers = "\n".join(f"        server 127.0.0.1:{p};" for p in upstreams)
    conf = tmp_path / "nginx.conf"
    conf.write_text(CONFIG.format(dir=tmp_path, servers=servers, port=port))
    with (tmp_path / "nginx.out").open("wb") as out:
        proc = subprocess.Popen(
            [NGINX, "-c", str(conf), "-p", str(tmp_path), "-g", "daemon off;"],
            stderr=subprocess.STDOUT,
            stdout=out,
        )
    try:
        yield port, upstreams
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
async def proxied(
    nginx: tuple[int, list[int]],
    launch: Launch,
    openai_upstream: FakeOpenAIUpstream,
    postgres_url: str,
) -> AsyncIterator[httpx.AsyncClient]:
    port, upstreams = nginx
    settings = shared(openai_upstream, postgres_url, runs_at_once=1)
    for upstream in upstreams:
        launch(port=upstream, **settings)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=15) as http:
        deadline = time.monotonic() + 10
        while (await http.get("/healthz")).status_code != 200:
            assert time.monotonic() < deadline, "nginx never answered"
        yield http


async def test_runs_behave_as_on_one_process_behind_a_round_robin_proxy(
    proxied: httpx.AsyncClient, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(Completion(text=LONG, delay=0.01))
    openai_upstream.enqueue(Completion(text=LONG, delay=0.05))
    cid, _, url = await start_run(proxied)

    # One run at a time per user, counted in Redis whichever instance is asked.
    for _ in range(2):
        other = (await proxied.post("/api/conversations", json={})).json()["id"]
        second = await proxied.post(f"/api/conversations/{other}/messages", json={"content": "x"})
        assert second.status_code == 429, second.text
    first_ten = await read_events(proxied, url, limit=10)
    whole, rest = await read_events(proxied, url), await read_events(proxied, url, after=10)
    assert_gap_free(whole)
    assert whole == first_ten + rest and text_of(whole) == LONG
    assert whole[-1].data["status"] == "completed"

    cid, run_id, url = await start_run(proxied)
    await read_events(proxied, url, limit=3)
    for _ in range(2):  # one of the two lands on the instance that does not run it
        cancelled = await proxied.post(f"/api/conversations/{cid}/runs/{run_id}/cancel")
        assert cancelled.json()["status"] == "cancelled"
    assert (await read_events(proxied, url))[-1].data["status"] == "cancelled"
