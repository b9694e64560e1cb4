"""What a short user reply means for a pending approval: approve, reject, or nothing.

    typed_decision("yes")            -> "approve"
    typed_decision("Да, давай!")     -> "approve"
    typed_decision("no")             -> "reject"
    typed_decision("отмена")         -> "reject"
    typed_decision("don't delete")   -> None   (negated: the model decides)
    typed_decision("yes but rename") -> None   (more than an answer: the model decides)

Only a whole reply counts: after lower-casing, dropping punctuation and emoji and a
polite word ("please", "пожалуйста", "thanks"), the words must be exactly one of the
answers below. A reply that says anything more, or negates (`don't`, `не`, `not`), or
asks ("approve?", "да?": a question is not an answer) is never an approval: it goes to
the model with the approval still pending. Wrongly
approving is the one mistake that cannot be taken back, so the lists are short and a
miss costs the user one click.

`negated(text)` is the guard on its own: a request whose intent is negated ("don't
delete the backup", "не удаляй бэкап") or that asks to stop.
"""

from __future__ import annotations

import re
from typing import Literal

TypedDecision = Literal["approve", "reject"]

_APPROVE = frozenset(
    {
        "yes",
        "y",
        "yep",
        "yeah",
        "yes do it",
        "yes go ahead",
        "yes proceed",
        "ok",
        "okay",
        "ok do it",
        "sure",
        "approve",
        "approved",
        "i approve",
        "confirm",
        "confirmed",
        "i confirm",
        "go ahead",
        "do it",
        "proceed",
        "да",
        "ага",
        "ок",
        "окей",
        "да давай",
        "да делай",
        "да выполняй",
        "давай",
        "делай",
        "выполняй",
        "подтверждаю",
        "подтвердить",
        "одобряю",
        "одобрить",
        "согласен",
        "согласна",
    }
)
_REJECT = frozenset(
    {
        "no",
        "n",
        "nope",
        "no thanks",
        "reject",
        "rejected",
        "i reject",
        "deny",
        "denied",
        "cancel",
        "stop",
        "abort",
        "no dont",
        "dont",
        "dont do it",
        "нет",
        "неа",
        "отмена",
        "отменить",
        "отмени",
        "отменяю",
        "стоп",
        "не надо",
        "не нужно",
        "нет не надо",
        "нет не нужно",
        "отклонить",
        "отклоняю",
    }
)
_POLITE = frozenset({"please", "pls", "thanks", "thank you", "пожалуйста", "спасибо"})
_NEGATIONS = frozenset(
    {
        "not",
        "no",
        "dont",
        "doesnt",
        "didnt",
        "shouldnt",
        "mustnt",
        "cant",
        "cannot",
        "wont",
        "never",
        "stop",
        "cancel",
        "abort",
        "halt",
        "nevermind",
        "isnt",
        "arent",
        "wasnt",
        "werent",
        "havent",
        "hasnt",
        "wouldnt",
        "couldnt",
        "neither",
        "nor",
        "не",
        "нет",
        "неа",
        "ни",
        "нельзя",
        "никогда",
        "отмена",
        "отмени",
        "отменить",
        "отменяй",
        "отмените",
        "стоп",
        "стой",
        "хватит",
        "прекрати",
        "прекратите",
        "перестань",
        "отбой",
        "отставить",
        "postpone",
        "defer",
        "skip",
        "пропусти",
        "пропустить",
        "повремени",
        "погоди",
        "отложи",
        "отложить",
    }
)
_NEGATING_PHRASES = ("forget it", "hold off", "hold on")
_NOT_A_WORD = re.compile(r"[^\w\s]+")
_SPACES = re.compile(r"\s+")


def normalized(text: str) -> str:
    """Lower case, apostrophes dropped (`don't` -> `dont`), other punctuation and emoji
    as spaces, runs of spaces as one, `ё` as `е`."""
    lowered = text.lower().replace("ё", "е").replace("'", "").replace("\u2019", "")
    return _SPACES.sub(" ", _NOT_A_WORD.sub(" ", lowered)).strip()


def _without_politeness(words: str) -> str:
    for polite in _POLITE:
        if words.endswith(" " + polite):
            words = words[: -len(polite) - 1]
        if words.startswith(polite + " "):
            words = words[len(polite) + 1 :]
    return words


def typed_decision(text: str) -> TypedDecision | None:
    if "?" in text or "\uff1f" in text:  # "approve?" asks, it does not answer
        return None
    words = _without_politeness(normalized(text))
    if words in _APPROVE:
        return "approve"
    if words in _REJECT:
        return "reject"
    return None


def negated(text: str) -> bool:
    """True when the request negates what it names or asks to stop: a mutating tool must
    never be pre-selected for it."""
    words = normalized(text)
    padded = f" {words} "
    return any(word in _NEGATIONS for word in words.split()) or any(
        f" {phrase} " in padded for phrase in _NEGATING_PHRASES
    )
