"""Fitting a history into the context window, and cutting over-long user text."""

from __future__ import annotations

from app.agent.context import TRUNCATION_MARKER, estimate_tokens, fit_history, truncate_user_text
from app.domain.messages import Message


def turns(n: int, size: int = 400) -> list[Message]:
    out: list[Message] = []
    for i in range(n):
        out.append(Message(id=f"u{i}", role="user", content=f"question {i} " + "x" * size))
        out.append(Message(id=f"a{i}", role="assistant", content=f"answer {i} " + "y" * size))
    return out


def test_everything_stays_when_it_fits() -> None:
    history = [Message(role="system", content="Be brief."), *turns(3)]

    fitted, info = fit_history(history, context_window=100_000, reserve_tokens=1000)

    assert fitted == history
    assert info.trimmed_messages == 0


def test_the_oldest_turns_go_first_and_the_system_prompt_stays() -> None:
    system = Message(id="sys", role="system", content="Be brief.")
    history = [system, *turns(10), Message(id="last", role="user", content="newest?")]
    budget = sum(estimate_tokens(m) for m in history[-5:]) + estimate_tokens(system)

    fitted, info = fit_history(history, context_window=budget * 2, reserve_tokens=budget)

    assert fitted[0] is system
    assert fitted[-1].id == "last"
    assert info.trimmed_messages > 0
    kept_ids = [m.id for m in fitted[1:]]
    assert kept_ids == [m.id for m in history[-len(kept_ids) :]]


def test_a_fitted_history_never_opens_with_an_assistant_turn() -> None:
    history = turns(6)
    # Room for about three messages: the cut would land on an assistant turn.
    room = sum(estimate_tokens(m) for m in history[-3:])

    fitted, _ = fit_history(history, context_window=room * 2, reserve_tokens=room)

    assert fitted[0].role == "user"


def test_short_user_text_is_left_alone() -> None:
    assert truncate_user_text("Hello.") == ("Hello.", False)


def test_long_user_text_is_cut_at_a_sentence_with_a_marker() -> None:
    sentence = "This is one sentence. "
    text = sentence * 100

    cut, truncated = truncate_user_text(text, limit=1000)

    assert truncated
    assert cut.endswith(TRUNCATION_MARKER)
    body = cut.removesuffix(TRUNCATION_MARKER).rstrip()
    assert body.endswith("sentence.")
    assert len(body) <= 1000
    assert text.startswith(body)
