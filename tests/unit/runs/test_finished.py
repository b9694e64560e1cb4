"""The finished runs kept for late readers: bounded by count and by the bytes they hold."""

from __future__ import annotations

import pytest

from app.domain.events import TextDeltaEvent
from app.runs import finished as finished_module
from app.runs.active import ActiveRun
from app.runs.finished import FinishedRuns
from app.runs.log import HELD_EVENT_OVERHEAD, RunLog


def run(run_id: str, events: int, conversation_id: str = "conv_1") -> ActiveRun:
    log = RunLog(run_id)
    for _ in range(events):
        log.append(TextDeltaEvent(run_id=run_id, message_id="msg_1", delta="x" * 100))
    log.close()
    return ActiveRun(run_id, "user_1", conversation_id, "msg_1", log, writer=None)


def kept(runs: FinishedRuns, *run_ids: str) -> list[str]:
    return [r for r in run_ids if runs.get(r) is not None]


def test_a_kept_run_holds_its_events_as_json_only() -> None:
    runs = FinishedRuns()
    runs.add(run("run_a", 3))

    held = runs.get("run_a")

    assert held is not None
    assert not [item.seq for item in held.log.since(0) if item.parsed]


def test_the_oldest_runs_go_once_the_logs_hold_more_bytes_than_the_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    one = run("run_x", 10).log.held_bytes()
    assert one > 10 * HELD_EVENT_OVERHEAD
    monkeypatch.setattr(finished_module, "FINISHED_LOG_BYTES", 2 * one)
    runs = FinishedRuns()

    for run_id in ("run_a", "run_b", "run_c"):
        runs.add(run(run_id, 10))

    assert kept(runs, "run_a", "run_b", "run_c") == ["run_b", "run_c"]


def test_a_log_larger_than_the_whole_budget_is_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(finished_module, "FINISHED_LOG_BYTES", run("run_x", 10).log.held_bytes())
    runs = FinishedRuns()
    runs.add(run("run_a", 5))

    runs.add(run("run_long", 20))

    assert kept(runs, "run_a", "run_long") == ["run_a"]


def test_the_runs_of_a_purged_conversation_give_their_bytes_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(finished_module, "FINISHED_LOG_BYTES", run("run_x", 20).log.held_bytes())
    runs = FinishedRuns()
    runs.add(run("run_a", 10, "conv_1"))
    runs.add(run("run_b", 10, "conv_2"))

    runs.forget("conv_1")
    runs.add(run("run_c", 10, "conv_3"))

    assert kept(runs, "run_a", "run_b", "run_c") == ["run_b", "run_c"]


def test_no_more_than_the_count_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(finished_module, "FINISHED_LOGS_KEPT", 2)
    runs = FinishedRuns()

    for run_id in ("run_a", "run_b", "run_c"):
        runs.add(run(run_id, 1))

    assert kept(runs, "run_a", "run_b", "run_c") == ["run_b", "run_c"]
