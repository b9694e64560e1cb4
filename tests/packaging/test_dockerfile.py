"""The Dockerfile's promises, read from the file (no Docker on the test machines)."""

from __future__ import annotations

import importlib
import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from app.api.http_protocol import LeanHttpToolsProtocol
from app.settings import Settings
from tests.packaging.support import REPO

DOCKER_STOP_TIMEOUT = 10.0  # `docker stop` waits this long before SIGKILL unless told `-t`


@dataclass
class Stage:
    name: str
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [args for kw, args in self.instructions if kw == keyword]

    def one(self, keyword: str) -> str:
        [args] = self.all(keyword)
        return args

    def env(self) -> dict[str, str]:
        """ARG defaults and ENV values, in order, `${NAME}` references resolved."""
        values: dict[str, str] = {}
        for keyword, args in self.instructions:
            if keyword in {"ARG", "ENV"}:
                for pair in shlex.split(args):
                    key, _, value = pair.partition("=")
                    values[key] = expand(value, values)
        return values


def expand(value: str, env: dict[str, str]) -> str:
    return re.sub(r"\$\{?(\w+)\}?", lambda m: env.get(m.group(1), m.group(0)), value)


def stages(text: str) -> dict[str, Stage]:
    """Instructions by stage, continuation lines joined and comments dropped."""
    joined = re.sub(
        r"\\\n",
        " ",
        "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#")),
    )
    found: dict[str, Stage] = {}
    current: Stage | None = None
    for line in joined.splitlines():
        if not line.strip():
            continue
        keyword, _, args = line.strip().partition(" ")
        keyword, args = keyword.upper(), args.strip()
        if keyword == "FROM":
            current = found.setdefault(args.split()[-1], Stage(args.split()[-1]))
        elif current is not None:
            current.instructions.append((keyword, args))
    return found


@pytest.fixture(scope="module")
def image() -> dict[str, Stage]:
    return stages((REPO / "Dockerfile").read_text())


@pytest.fixture(scope="module")
def runtime(image: dict[str, Stage]) -> Stage:
    return image["runtime"]


def server_command(runtime: Stage) -> str:
    """The shell command the container runs (CMD is `sh -c "exec uvicorn ..."`)."""
    argv = json.loads(runtime.one("CMD"))
    assert argv[:2] == ["sh", "-c"]
    command: str = argv[2]
    return command


def option(command: str, name: str) -> str:
    words = shlex.split(command)
    return words[words.index(name) + 1]


def test_the_image_installs_the_pinned_versions(image: dict[str, Stage]) -> None:
    build = image["build"]
    assert any("constraints.txt" in args.split() for args in build.all("COPY"))
    installs = [a for a in build.all("RUN") if re.search(r"pip install -c constraints\.txt \.", a)]
    assert installs, "the project must be installed with -c constraints.txt"


def test_the_runtime_runs_the_installed_wheel_not_a_copy_of_the_sources(runtime: Stage) -> None:
    assert runtime.all("COPY") == ["--from=build /opt/venv /opt/venv"]


def test_the_server_starts_as_pid_1_so_sigterm_reaches_it(runtime: Stage) -> None:
    assert server_command(runtime).startswith("exec uvicorn app.main:app ")


def test_the_server_runs_uvicorns_httptools_protocol_with_lazy_waiting_state(
    runtime: Stage,
) -> None:
    """`--http` names the protocol class (less memory per open connection): a name
    uvicorn cannot import would stop the container at start-up."""
    module, _, name = option(server_command(runtime), "--http").partition(":")
    assert getattr(importlib.import_module(module), name) is LeanHttpToolsProtocol


def test_one_port_setting_drives_the_server_the_health_check_and_expose(runtime: Stage) -> None:
    command, health = server_command(runtime), runtime.one("HEALTHCHECK")
    assert runtime.env()["PORT"].isdigit()
    assert option(command, "--port") == "$PORT"
    assert "127.0.0.1:${PORT}/healthz" in health
    assert runtime.one("EXPOSE") == "${PORT}"
    assert not re.search(r":\d+/", health), "the health check must not hard-code a port"


def test_proxy_headers_are_believed_only_from_configured_proxies(runtime: Stage) -> None:
    command = server_command(runtime)
    assert "--proxy-headers" in shlex.split(command)
    assert option(command, "--forwarded-allow-ips") == "$FORWARDED_ALLOW_IPS"
    assert runtime.env()["FORWARDED_ALLOW_IPS"] not in {"", "*"}


def test_the_sqlite_file_lives_in_a_declared_volume_the_app_user_owns(runtime: Stage) -> None:
    url = runtime.env()["DATABASE_URL"]
    assert url.startswith("sqlite+aiosqlite:////")
    folder = str(Path(url.removeprefix("sqlite+aiosqlite:///")).parent)
    volumes = {v.strip('[]" ') for v in runtime.one("VOLUME").split(",")}
    assert folder in volumes
    keywords = [kw for kw, _ in runtime.instructions]
    chown = next(i for i, (kw, a) in enumerate(runtime.instructions) if kw == "RUN" and folder in a)
    assert chown < keywords.index("VOLUME"), "a volume keeps the ownership set before VOLUME"


def test_shutdown_finishes_inside_dockers_stop_timeout(runtime: Stage) -> None:
    env = runtime.env()
    graceful = float(expand(option(server_command(runtime), "--timeout-graceful-shutdown"), env))
    assert "shutdown_timeout_seconds" in Settings.model_fields
    checkpoint = float(env["SHUTDOWN_TIMEOUT_SECONDS"])
    # uvicorn waits for open responses first, then runs the app's shutdown: one after the other.
    assert checkpoint < graceful
    assert graceful + checkpoint < DOCKER_STOP_TIMEOUT


def test_python_objects_live_on_glibcs_heap_so_a_burst_of_streams_is_returned(
    runtime: Stage,
) -> None:
    """pymalloc keeps an arena while one object in it lives; glibc's heap is trimmed."""
    assert runtime.env()["PYTHONMALLOC"] == "malloc"
