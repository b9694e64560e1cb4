"""The router benchmark's labeled sets are whole, and the guard figure holds without a model."""

from __future__ import annotations

from collections import Counter

from bench.router import catalogue, measure
from bench.router_heldout import HELD_OUT
from bench.router_requests import CASES


def test_the_labeled_set_covers_both_languages_and_every_kind() -> None:
    names = {t.name for t in catalogue().all()}

    assert len(CASES) >= 300
    assert min(Counter(c.lang for c in CASES).values()) >= 140
    assert {c.kind for c in CASES} >= {"plain", "synonym", "typo", "negation", "trap", "multi"}
    assert all(set(c.tools) <= names for c in CASES)
    assert len(names) >= 25  # the example graph and operations tools, and capabilities


def test_the_held_out_set_is_apart_and_covers_both_languages_and_every_kind() -> None:
    names = {t.name for t in catalogue().all()}

    assert min(Counter(c.lang for c in HELD_OUT).values()) >= 60
    assert {c.kind for c in HELD_OUT} >= {"plain", "synonym", "typo", "negation", "trap", "multi"}
    assert all(set(c.tools) <= names for c in HELD_OUT)
    assert not {c.text for c in HELD_OUT} & {c.text for c in CASES}


async def test_keywords_alone_never_preselect_a_mutating_tool_for_a_negated_request() -> None:
    report = await measure("none", show_misses=False)

    for figures in (report[s][lang] for s in ("tuned", "held_out") for lang in ("en", "ru")):
        assert figures["negated_preselected_mutating"] == 0
        assert figures["negated_detected_pct"] == 100.0
        assert figures["token_reduction_pct"] >= 50
