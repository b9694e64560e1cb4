"""No configuration error shows a secret, or the bad value itself: every error we know of,
with a canary in every secret setting and in the values, read in every way an operator or
a log could see it (the message, repr, a printed traceback with its chained cause, the
entry point's stderr, log records). Real processes: tests/e2e/test_config_errors_e2e.py."""

from __future__ import annotations

import logging
import traceback
from pathlib import Path

import pytest

from app.config_errors import ConfigurationError
from app.settings import Settings, get_settings, settings_or_exit
from tests.canary import Seen
from tests.support.broken_settings import ALL_CANARIES, all_field_errors, cases, environment


@pytest.fixture
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    monkeypatch.chdir(tmp_path)
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def everything_shown(capsys: pytest.CaptureFixture[str]) -> tuple[list[str], str]:
    """The problems, and all text the failure can show, for the current environment."""
    with pytest.raises(ConfigurationError) as info:
        get_settings()
    error = info.value
    shown = [str(error), repr(error), "".join(traceback.format_exception(error))]
    shown += [str(error.__context__), repr(error.__context__)]
    with pytest.raises(SystemExit):
        settings_or_exit()
    captured = capsys.readouterr()
    return error.problems, "\n".join([*shown, captured.out, captured.err])


def test_no_configuration_error_shows_a_secret_or_the_value(
    clean_environment: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    leaks: list[str] = []
    unnamed: list[str] = []
    for name, overrides, variable in cases(tmp_path):
        with clean_environment.context() as env:
            for key, value in environment(overrides).items():
                env.setenv(key, value)
            problems, shown = everything_shown(capsys)
        seen = Seen()
        seen.add(name, shown)
        leaks += seen.find(ALL_CANARIES)
        if not any(line.startswith(variable) for line in problems):
            unnamed.append(f"{name}: {problems}")
    seen = Seen()
    seen.add("logs", caplog.text)
    assert leaks + seen.find(ALL_CANARIES) == []
    assert unnamed == []


def test_all_errors_at_once_are_one_line_each_and_show_no_secret(
    clean_environment: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = all_field_errors(tmp_path)
    for key, value in environment(broken).items():
        clean_environment.setenv(key, value)
    problems, shown = everything_shown(capsys)
    seen = Seen()
    seen.add("all at once", shown)
    assert seen.find(ALL_CANARIES) == []
    assert {line.split(":")[0].split("[")[0] for line in problems} == set(broken)
