"""The hybrid router: keyword hits, an embedding fallback, a capabilities tool, a guard.

    route = await router.route("удали бэкап базы orders", available=names)
    route.tools      -> ["delete_backup", "list_backups", ..., "list_capabilities"]
    route.intended   -> the tool the request most likely means (never a mutating one
                        when the request is negated: the model decides)

`select` is what the agent loop calls: the specs the model is offered for this turn.
Whether a turn is routed at all is decided per deployment and per catalogue entry: `on`,
`off`, or `auto` (only when the model would see more than `min_tools` tools).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from app.domain.intent import negated
from app.domain.models import ModelInfo
from app.domain.stream import ToolSpec
from app.routing.embeddings import LazyEmbeddings
from app.routing.keywords import KeywordIndex, RoutedTool, score

RouterMode = Literal["on", "off", "auto"]
CAPABILITIES_TOOL = "list_capabilities"


@dataclass(frozen=True)
class RouterConfig:
    mode: RouterMode = "auto"
    min_tools: int = 12  # auto: route only when more tools than this are available
    fallback_below: int = 3  # fewer keyword tools than this: ask the embeddings too
    top_k: int = 8
    threshold: float = 0.75
    max_tools: int = 10


@dataclass
class Route:
    """What the router chose for one request, and why."""

    text: str
    routed: bool
    reason: str
    negated: bool = False
    tools: list[str] = field(default_factory=list)
    intended: str | None = None
    keyword_hits: dict[str, list[str]] = field(default_factory=dict)
    similarities: dict[str, float] = field(default_factory=dict)
    fallback_used: bool = False
    embeddings: str = ""
    elapsed_ms: float = 0.0


class ToolRouter:
    """`tools` is the catalogue, or a function reading it: tools mounted later (an MCP
    server that reconnects) are indexed when a request first offers them."""

    def __init__(
        self,
        tools: Iterable[RoutedTool] | Callable[[], Iterable[RoutedTool]],
        config: RouterConfig,
        embeddings: LazyEmbeddings,
    ) -> None:
        self._source = tools if callable(tools) else (lambda: tools)
        self._index_tools()
        self.config = config
        self.embeddings = embeddings

    def _index_tools(self) -> None:
        self._tools = {t.name: t for t in self._source()}
        self._index = KeywordIndex(self._tools.values())
        # built once: the embeddings compare them per request, by identity when unchanged
        self._corpora = {n: tuple(t.corpus()) for n, t in self._tools.items()}

    def mode_for(self, model: ModelInfo | None) -> tuple[RouterMode, int]:
        mode = (model.tool_router if model is not None else None) or self.config.mode
        limit = model.tool_router_min_tools if model is not None else None
        return mode, limit if limit is not None else self.config.min_tools

    def status(self) -> dict[str, str]:
        return {
            "mode": self.config.mode,
            "tools": str(len(self._tools)),
            "embeddings": self.embeddings.status,
        }

    async def select(
        self,
        text: str,
        specs: Sequence[ToolSpec],
        model: ModelInfo,
        keep: Sequence[str] = (),
    ) -> list[ToolSpec]:
        """The specs the model is offered this turn (all of them when not routed), with
        the tools in `keep` (already used in the conversation: a follow-up such as
        "delete the second one" keeps the tools it refers to)."""
        route = await self.route(text, [s.name for s in specs], model)
        if not route.routed:
            return list(specs)
        by_name = {s.name: s for s in specs}
        chosen = [n for n in route.tools if n != CAPABILITIES_TOOL]
        extra = [n for n in keep if n not in chosen]
        names = [*chosen, *extra, *(n for n in route.tools if n == CAPABILITIES_TOOL)]
        return [by_name[name] for name in dict.fromkeys(names) if name in by_name]

    async def route(
        self, text: str, available: Sequence[str] | None = None, model: ModelInfo | None = None
    ) -> Route:
        started = time.perf_counter()
        names = list(available) if available is not None else list(self._tools)
        mode, min_tools = self.mode_for(model)
        if mode == "off" or (mode == "auto" and len(names) <= min_tools):
            why = "routing is off" if mode == "off" else f"{len(names)} tools <= {min_tools}"
            return Route(text, routed=False, reason=why, tools=names)
        route = await self._choose(text, names)
        route.elapsed_ms = round((time.perf_counter() - started) * 1000, 3)
        return route

    async def _choose(self, text: str, names: list[str]) -> Route:
        if any(n not in self._tools for n in names):
            self._index_tools()
        known = [n for n in names if n in self._tools]
        found = self._index.hits(text)
        hits = {n: found[n] for n in known if n in found}  # catalogue order breaks ties
        ranked = sorted(hits, key=lambda n: -score(hits[n]))
        route = Route(text, routed=True, reason="keywords", keyword_hits=hits)
        route.negated = negated(text)
        route.embeddings = self.embeddings.status
        scores: dict[str, float] = {}
        if len(ranked) < self.config.fallback_below and text.strip():
            corpora = [self._corpora[n] for n in known]
            if self.embeddings.available:
                if self.embeddings.ready_for(text, corpora):
                    sims = self.embeddings.similarities(text, corpora)
                else:
                    sims = await asyncio.to_thread(self.embeddings.similarities, text, corpora)
                scores = dict(zip(known, sims, strict=True))
                route.fallback_used = True
                route.reason = "keywords + embeddings"
            route.embeddings = self.embeddings.status
        by_similarity = sorted(scores, key=lambda n: -scores[n])
        close = [n for n in by_similarity if scores[n] >= self.config.threshold]
        merged = list(dict.fromkeys([*ranked, *close[: self.config.top_k]]))
        # ties among keyword hits are broken by similarity when it was computed
        merged.sort(key=lambda n: (-score(hits.get(n, [])), -scores.get(n, 0.0)))
        chosen = [n for n in merged if n != CAPABILITIES_TOOL][: self.config.max_tools - 1]
        route.intended = self._intended(chosen, route.negated)
        if CAPABILITIES_TOOL in names:
            chosen.append(CAPABILITIES_TOOL)
        route.tools = chosen
        route.similarities = {n: round(scores[n], 4) for n in by_similarity[:10]}
        if not merged:
            route.reason = "nothing matched: only the capabilities tool"
        return route

    def _intended(self, chosen: list[str], is_negated: bool) -> str | None:
        """The negation guard: a negated request never pre-selects a mutating tool."""
        for name in chosen:
            if not (is_negated and self._tools[name].mutates):
                return name
        return None
