"""Which short replies decide an approval, and which requests are negated."""

from __future__ import annotations

import pytest

from app.domain.intent import negated, typed_decision


@pytest.mark.parametrize(
    "text",
    [
        "yes",
        "Yes!",
        "YES, please",
        "ok",
        "go ahead",
        "Approve.",
        "да",
        "Да!",
        "ок",
        "Да, давай",
        "подтверждаю",
        "давай пожалуйста",
        "👍 yes",
    ],
)
def test_whole_answers_approve(text: str) -> None:
    assert typed_decision(text) == "approve"


@pytest.mark.parametrize(
    "text",
    [
        "no",
        "No.",
        "nope",
        "cancel",
        "Stop!",
        "нет",
        "Отмена",
        "не надо",
        "нет, не нужно",
        "don't",
        "отклоняю",
    ],
)
def test_whole_refusals_reject(text: str) -> None:
    assert typed_decision(text) == "reject"


@pytest.mark.parametrize(
    "text",
    [
        "don't delete the backup",
        "не удаляй бэкап",
        "yes but rename it first",
        "yes and no",
        "not yes",
        "не подтверждаю",
        "yesterday",
        "okay so what does it delete",
        "да нет",
        "",
        "   ",
        "delete it",
        "удали",
        # hostile: a refusal of the action that is not a plain "no", a change of mind,
        # a yes with a condition, a question
        "не надо удалять",
        "don't, actually",
        "yes, but don't delete",
        "approve? no",
        "approve?",
        "да?",
        "Yes?!",
        "ok？",
        "no?",
        "да, но не удаляй",
        "не отменяй",
        "no wait, yes",
    ],
)
def test_anything_more_decides_nothing(text: str) -> None:
    assert typed_decision(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "don't delete the backup",
        "do not drop the schema",
        "never deploy on friday",
        "не удаляй бэкап",
        "нельзя удалять",
        "stop",
        "отмена",
        "I can't delete this, right?",
        "не надо удалять",
        "don't, actually",
        "yes, but don't delete",
        "approve? no",
        "nevermind, keep the backup",
        "forget it",
        "hold off on the deploy",
        "that isn't what I want, delete nothing",
        "хватит деплоить",
        "прекрати откат",
        "отставить удаление",
        "отмените релиз",
        "postpone the migration to Monday",
        "повремени с деплоем до понедельника",
        "погоди с откатом",
        "отложи удаление бэкапов",
    ],
)
def test_negated_requests(text: str) -> None:
    assert negated(text)


@pytest.mark.parametrize(
    "text",
    [
        "delete the backup",
        "удали бэкап",
        "notify the team",
        "another node",
        "неделя отчётов",
        "hold the line: deploy now",
        "forgetful user, reset her password",
        "show the postponed deployments",  # a form of it is not the word
        "отложенные задачи деплоя",
    ],
)
def test_plain_requests_are_not_negated(text: str) -> None:
    assert not negated(text)
