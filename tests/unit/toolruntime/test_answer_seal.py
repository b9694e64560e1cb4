"""An answer kept with a server-held key is known again only with that key: a reader of
the table, who has no key, cannot check a guess against it."""

from __future__ import annotations

from app.toolruntime.answer_seal import AnswerSeal

PIN = {"pin": "4711"}


def test_a_keyed_answer_matches_itself_under_its_key_only() -> None:
    kept = AnswerSeal(b"server key").seal("accept", PIN)

    assert kept.startswith("k1:") and len(kept) <= 64
    assert AnswerSeal(b"server key").matches(kept, "accept", PIN)
    assert not AnswerSeal(b"server key").matches(kept, "accept", {"pin": "4712"})
    assert not AnswerSeal(b"another key").matches(kept, "accept", PIN)
    assert not AnswerSeal().matches(kept, "accept", PIN)


def test_without_a_key_each_answer_is_salted_afresh() -> None:
    seal = AnswerSeal()

    first, second = seal.seal("accept", PIN), seal.seal("accept", PIN)

    assert first != second and len(first) <= 64
    assert seal.matches(first, "accept", PIN) and seal.matches(second, "accept", PIN)
    assert not seal.matches(first, "decline", None)
