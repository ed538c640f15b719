"""The logging set-up every process shares (schemas.runtime.logs): one JSON object per line on
stderr, structlog's lines and the standard library's alike, tracebacks as a field, the level
obeyed."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pydantic
import pytest
import structlog

from schemas.runtime.logs import LogSettings, configure_logging

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def restored(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test configures the process; leave it as it was for the others."""
    for var in ("CENTRALITY_LOG_LEVEL", "CENTRALITY_LOG_FORMAT"):
        monkeypatch.delenv(var, raising=False)
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    aiokafka = logging.getLogger("aiokafka").level
    yield
    root.handlers[:], root.level = handlers, level
    logging.getLogger("aiokafka").setLevel(aiokafka)
    logging.captureWarnings(False)
    structlog.reset_defaults()


def lines(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    captured = capsys.readouterr()
    assert captured.out == ""  # logs never go to stdout: that is for a command's output
    parsed = [orjson.loads(line) for line in captured.err.splitlines()]
    for line in parsed:
        assert isinstance(line, dict)
        assert {"timestamp", "level", "logger", "event"} <= set(line), line
        assert line["timestamp"].endswith("Z")
    return parsed


def test_a_structlog_line_is_one_json_object_with_its_fields(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging(json=True)
    structlog.get_logger("streams").info("trigger", type="RestartJob", attempt=2)
    [line] = lines(capsys)
    assert line["event"] == "trigger"
    assert line["level"] == "info"
    assert line["logger"] == "streams"
    assert (line["type"], line["attempt"]) == ("RestartJob", 2)


def test_log_exception_keeps_the_traceback_as_text(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(json=True)
    try:
        {}["missing"]
    except KeyError:
        structlog.get_logger("streams").exception("processing_failed", offset=7)
    [line] = lines(capsys)
    assert line["level"] == "error"
    assert "exc_info" not in line
    assert line["exception"].startswith("Traceback (most recent call last):")
    assert "test_logs.py" in line["exception"] and "KeyError: 'missing'" in line["exception"]


def test_standard_library_records_come_out_the_same_way(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging(json=True)
    logging.getLogger("aiokafka.conn").warning("Unable connect to %r: %s", "k1:9092", "refused")
    try:
        raise ConnectionError("broker gone")
    except ConnectionError:
        logging.getLogger("faust.worker").exception("[^Worker]: Error: %r", "x")
    first, second = lines(capsys)
    assert first["event"] == "Unable connect to 'k1:9092': refused"
    assert (first["level"], first["logger"]) == ("warning", "aiokafka.conn")
    assert (second["level"], second["logger"]) == ("error", "faust.worker")
    assert second["exception"].endswith("ConnectionError: broker gone")


def test_python_warnings_are_log_lines_too(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(json=True)
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        configure_logging(json=True)  # again: catch_warnings put the standard showwarning back
        warnings.warn("old API", DeprecationWarning, stacklevel=1)
    [line] = lines(capsys)
    assert line["logger"] == "py.warnings" and "DeprecationWarning: old API" in line["event"]


@pytest.mark.parametrize("level", ["WARNING", "warning", " Warning "])
def test_the_level_setting_filters_ours_and_the_standard_librarys(
    level: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CENTRALITY_LOG_LEVEL", level)
    configure_logging(json=True)
    log = structlog.get_logger("actions")
    log.debug("d")
    log.info("i")
    log.warning("w")
    logging.getLogger("faust").info("fi")
    logging.getLogger("faust").error("fe")
    assert [line["event"] for line in lines(capsys)] == ["w", "fe"]


def test_debug_shows_everything_but_aiokafkas_per_fetch_chatter(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CENTRALITY_LOG_LEVEL", "DEBUG")
    configure_logging(json=True)
    structlog.get_logger("sink").debug("batch", rows=3)
    logging.getLogger("faust.tables").debug("recovered")
    logging.getLogger("aiokafka.consumer.fetcher").debug("Adding fetch request")
    logging.getLogger("aiokafka.consumer.fetcher").info("Fetch offset reset")
    assert [line["event"] for line in lines(capsys)] == [
        "batch",
        "recovered",
        "Fetch offset reset",
    ]


def test_the_environment_wins_over_a_commands_quieter_default(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    configure_logging(json=True, level="WARNING")
    structlog.get_logger("demo").info("hidden")
    assert lines(capsys) == []
    monkeypatch.setenv("CENTRALITY_LOG_LEVEL", "INFO")
    configure_logging(json=True, level="WARNING")
    structlog.get_logger("demo").info("shown")
    assert [line["event"] for line in lines(capsys)] == ["shown"]


def test_configuring_again_does_not_double_standard_library_lines(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging(json=True)
    configure_logging(json=True)
    logging.getLogger("mode").warning("once")
    assert [line["event"] for line in lines(capsys)] == ["once"]


class Opaque:
    def __repr__(self) -> str:
        return "<Opaque>"


def test_whatever_a_field_holds_the_line_is_written_and_nothing_raises(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging(json=True)
    log = structlog.get_logger("streams")
    log.error("dead_letter", value=2**70, text="\ud800 lone surrogate", obj=Opaque())
    log.error("dead_letter", mapping={1: "a"}, raw=b"\xff\x00")
    cycle: list[Any] = []
    cycle.append(cycle)
    log.error("dead_letter", mapping={(2, 3): "b"}, cycle=cycle)
    first, second, third = lines(capsys)
    assert first["value"] == 2**70 and first["obj"] == "<Opaque>"
    assert first["text"] == "? lone surrogate"  # every JSON parser reads the line
    assert second["mapping"] == {"1": "a"} and second["raw"] == repr(b"\xff\x00")
    assert third["mapping"] == "{(2, 3): 'b'}" and third["cycle"] == "[[...]]"


def test_console_format_is_for_reading(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CENTRALITY_LOG_FORMAT", "console")
    configure_logging()
    structlog.get_logger("agent").info("started", gpus=8)
    logging.getLogger("aiokafka").warning("plain record")
    err = capsys.readouterr().err
    first, second = err.splitlines()
    assert not first.startswith("{")
    assert "[info     ] started" in first and "gpus=8" in first and "[agent]" in first
    assert "plain record" in second and "[aiokafka]" in second


def test_bad_settings_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CENTRALITY_LOG_LEVEL", "LOUD")
    with pytest.raises(pydantic.ValidationError, match="CRITICAL"):
        LogSettings()
    monkeypatch.setenv("CENTRALITY_LOG_LEVEL", "info")
    monkeypatch.setenv("CENTRALITY_LOG_FORMAT", "xml")
    with pytest.raises(pydantic.ValidationError, match="console"):
        LogSettings()


PROGRAM = (
    "import logging, structlog\n"
    "from schemas.runtime.logs import configure_logging\n"
    "configure_logging()\n"
    "structlog.get_logger('agent').info('started', gpus=8)\n"
    "logging.getLogger('aiokafka').warning('plain record')\n"
)


def run_with_stderr(stderr: int) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CENTRALITY_LOG_")}
    env["PYTHONPATH"] = str(ROOT)
    subprocess.run([sys.executable, "-c", PROGRAM], stderr=stderr, env=env, check=True, timeout=60)
