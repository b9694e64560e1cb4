"""nginx in front of chat-bff as the README documents it: Debian's `proxy_params` plus the
SSE lines, round-robin over the instances. Used by the scale benchmark and the e2e test."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"

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
        keepalive 32;
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


def installed() -> bool:
    return Path(NGINX).exists()


@contextmanager
def nginx(
    directory: Path, port: int, upstreams: Sequence[int]
) -> Iterator[subprocess.Popen[bytes]]:
    """nginx listening on 127.0.0.1:`port`, round-robin over `upstreams` (loopback ports)."""
    servers = "\n".join(f"        server 127.0.0.1:{p};" for p in upstreams)
    conf = directory / "nginx.conf"
    conf.write_text(CONFIG.format(dir=directory, servers=servers, port=port))
    with (directory / "nginx.out").open("wb") as out:
        proc = subprocess.Popen(
            [NGINX, "-c", str(conf), "-p", str(directory), "-g", "daemon off;"],
            stderr=subprocess.STDOUT,
            stdout=out,
        )
    try:
        yield proc
    finally:
        proc.terminate()
        proc.wait(10)
