"""Each worker as a real process, its stdout and stderr pipes: every line it writes is one JSON
object (timestamp, level, logger, event), the libraries' records (Faust, mode, aiokafka) as much
as ours; a failure logged with its exception carries the traceback; the level setting filters.
The streams worker runs as `centrality streams` runs it (the Faust CLI in a child process)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

import orjson

from schemas.envelope import Event
from schemas.runtime.emitter import Emitter
from schemas.runtime.settings import KafkaSettings
from streams.testing import ended, running

CLI = Path(sys.executable).with_name("centrality")
Line = dict[str, Any]


class Piped:
    """`centrality <command>` with stdout and stderr on pipes, read line by line as it runs."""

    def __init__(self, command: str, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [str(CLI), command],
            env={**os.environ, **env},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self.out: list[bytes] = []
        self.err: list[bytes] = []
        self._readers = [
            self._read(self.proc.stdout, self.out),
            self._read(self.proc.stderr, self.err),
        ]

    @staticmethod
    def _read(stream: IO[bytes], into: list[bytes]) -> threading.Thread:
        thread = threading.Thread(target=lambda: into.extend(iter(stream.readline, b"")))
        thread.start()
        return thread

    def lines(self) -> list[Line]:
        """Every line so far, parsed; a line that is not one JSON object fails the test."""
        parsed = [orjson.loads(line) for line in list(self.err)]
        for line in parsed:
            assert isinstance(line, dict) and {"timestamp", "level", "logger", "event"} <= set(
                line
            ), line
        return parsed

    def wait_for(self, what: str, found: Callable[[list[Line]], bool], timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while not found(self.lines()):
            assert self.proc.poll() is None, f"exited before {what}:\n{self.tail()}"
            assert time.monotonic() < deadline, f"no {what} within {timeout_s} s:\n{self.tail()}"
            time.sleep(0.2)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        for reader in self._readers:
            reader.join(timeout=10)

    def tail(self) -> str:
        return b"".join(self.err[-30:]).decode(errors="replace")


def emit(settings: KafkaSettings, events: Sequence[Event]) -> None:
    async def send() -> None:
        async with Emitter(settings) as emitter:
            for event in events:
                await emitter.emit(event)

    asyncio.run(send())


def streams_env(worker_env: dict[str, str], level: str) -> dict[str, str]:
    return {
        **worker_env,
        "CENTRALITY_STREAMS_TICK_INTERVAL_S": "3600",
        # A module of the user's own: on PYTHONPATH, as docs/rules.md says.
        "CENTRALITY_RULES": "tests.support.exploding_rule",
        "PYTHONPATH": str(Path(__file__).parents[3]),
        "CENTRALITY_LOG_LEVEL": level,
    }


def story(unique: str) -> list[Event]:
    """A crash (a `RestartJob`, logged as `trigger` at info) and a job that trips the exploding
    rule (`processing_failed`, logged at error with its exception)."""
    crashed, exploding = f"slurm/logs/{unique}-crash", f"slurm/logs/{unique}-explode"
    return [running(crashed), ended(crashed), running(exploding), ended(exploding)]


def failed(lines: list[Line]) -> list[Line]:
    return [line for line in lines if line["event"] == "processing_failed"]


def test_the_streams_worker_writes_json_lines_with_tracebacks(
    kafka_settings: KafkaSettings, worker_env: dict[str, str], unique: str
) -> None:
    worker = Piped("streams", streams_env(worker_env, "INFO"))
    try:
        emit(kafka_settings, story(unique))
        worker.wait_for(
            "the trigger and the failure",
            lambda lines: failed(lines) and any(ln["event"] == "trigger" for ln in lines),
            120,
        )
    finally:
        worker.stop()
    assert worker.out == []  # no banner, no spinner, no stray print
    lines = worker.lines()
    [trigger] = [line for line in lines if line["event"] == "trigger"]
    assert (trigger["logger"], trigger["level"], trigger["type"]) == (
        "streams",
        "info",
        "RestartJob",
    )
    assert trigger["subject"] == f"slurm/logs/{unique}-crash"
    [failure] = failed(lines)
    assert failure["level"] == "error"
    assert failure["exception"].startswith("Traceback (most recent call last):")
    assert "exploding_rule.py" in failure["exception"]
    assert (
        failure["exception"]
        .rstrip()
        .endswith(f"ExplodedError: the exploding rule, on slurm/logs/{unique}-explode")
    )
    assert "exc_info" not in failure
    # The libraries' records, the same JSON: Faust's services, aiokafka's consumer group.
    by_logger = {line["logger"].split(".")[0] for line in lines}
    assert {"faust", "aiokafka", "streams"} <= by_logger, by_logger
    assert any(line["event"] == "[^Worker]: Starting..." for line in lines)
    assert any(line["event"] == "[^Worker]: Stopping..." for line in lines)


def test_the_streams_worker_obeys_the_level_setting(
    kafka_settings: KafkaSettings, worker_env: dict[str, str], unique: str
) -> None:
    worker = Piped("streams", streams_env(worker_env, "WARNING"))
    try:
        emit(kafka_settings, story(unique))
        worker.wait_for("the failure", lambda lines: bool(failed(lines)), 120)
    finally:
        worker.stop()
    lines = worker.lines()
    assert {line["level"] for line in lines} <= {"warning", "error", "critical"}
    assert failed(lines)[0]["exception"].startswith("Traceback")


def test_the_action_worker_and_the_sink_write_json_lines(worker_env: dict[str, str]) -> None:
    workers = {name: Piped(name, worker_env) for name in ("actions", "sink")}
    try:
        for name, worker in workers.items():
            # aiokafka says so (info) once the consumer group gave the worker its partitions.
            worker.wait_for(
                f"{name}'s partitions",
                lambda lines: any(
                    ln["logger"].startswith("aiokafka") and "newly assigned" in ln["event"]
                    for ln in lines
                ),
                120,
            )
    finally:
        for worker in workers.values():
            worker.stop()
    for name, worker in workers.items():
        assert worker.out == [], name
        lines = worker.lines()
        loggers = {line["logger"].split(".")[0] for line in lines}
        assert "aiokafka" in loggers and {"actions", "sink"} & loggers, (name, loggers)
