"""`centrality actions` and `centrality sink` stop within 10 s of SIGTERM or SIGINT whatever they
are doing (an adapter call hanging, Slack down, ClickHouse down), committing only what finished."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from centrality.stack.clickhouse import LocalClickHouse
from schemas.runtime.settings import KafkaSettings
from schemas.topics import topic_name
from streams.history.lag import group_lag
from tests.integration.history.test_sink import by_subject, produce
from tests.integration.history.test_sink_outage import own_clickhouse, telemetry
from tests.ports import free_port
from tests.support.action_worker import send
from tests.support.triggers import restart

pytestmark = pytest.mark.integration
__all__ = ["own_clickhouse"]  # a fixture of this module too
CLI = str(Path(sys.executable).with_name("centrality"))
STOP_BUDGET_S = 10.0
SIGNALS = [signal.SIGTERM, signal.SIGINT]


def wait_until(
    what: str, done: Callable[[], bool], proc: subprocess.Popen[bytes], log: Path
) -> None:
    deadline = time.monotonic() + 60
    while not done():
        assert proc.poll() is None, f"exited while waiting for {what}:\n{log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, (
            f"timed out waiting for {what}:\n{log.read_text()[-3000:]}"
        )
        time.sleep(0.1)


def stop_s(proc: subprocess.Popen[bytes], sig: signal.Signals, log: Path) -> float:
    started = time.monotonic()
    proc.send_signal(sig)
    try:
        rc = proc.wait(STOP_BUDGET_S + 20)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(
            f"still running 30 s after {sig.name}:\n{log.read_text()[-3000:]}"
        ) from None
    took = time.monotonic() - started
    assert rc == 0, log.read_text()[-3000:]
    return took


@pytest.fixture
def hanging_scontrol(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A `scontrol` that never answers (within its 30 s command timeout): a hung scheduler."""
    bin_dir, mark = tmp_path / "bin", tmp_path / "scontrol.pid"
    bin_dir.mkdir()
    script = bin_dir / "scontrol"
    script.write_text(f"#!/bin/sh\necho $$ > {mark}\nexec sleep 120\n")
    script.chmod(0o755)
    yield bin_dir, mark
    if mark.exists():  # the hung command outlives the worker, as a hung scontrol would
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(mark.read_text()), signal.SIGKILL)


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_action_worker_stops_in_time_with_an_adapter_call_hanging_and_slack_down(
    sig: signal.Signals,
    kafka_settings: KafkaSettings,
    worker_env: dict[str, str],
    hanging_scontrol: tuple[Path, Path],
    tmp_path: Path,
) -> None:
    bin_dir, mark = hanging_scontrol
    env = {
        **os.environ,
        **worker_env,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "CENTRALITY_ACTIONS_ADAPTER": "slurm",
        "CENTRALITY_SLURM_CLUSTER": "test",
        "CENTRALITY_SLACK_TOKEN": "xoxb-test",
        "CENTRALITY_SLACK_BASE_URL": f"http://127.0.0.1:{free_port()}/api/",  # nobody there
        "CENTRALITY_EMITTER_SPOOL_DIR": str(tmp_path / "spool"),
    }
    log = tmp_path / "actions.log"
    proc = subprocess.Popen(
        [CLI, "actions"], env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT
    )
    try:
        asyncio.run(send(kafka_settings, restart()))
        wait_until("the adapter call to hang", mark.exists, proc, log)
        took = stop_s(proc, sig, log)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert took <= STOP_BUDGET_S, f"stopping took {took:.1f}s"
    # The hung trigger did not finish: its offset is not committed, the next worker meets it.
    [lag] = asyncio.run(
        group_lag(
            kafka_settings,
            worker_env["CENTRALITY_ACTIONS_GROUP_ID"],
            [topic_name("triggers", kafka_settings)],
        )
    )
    assert lag.committed == 0


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_sink_stops_in_time_while_clickhouse_is_down(
    sig: signal.Signals, worker_env: dict[str, str], tmp_path: Path
) -> None:
    env = {
        **os.environ,
        **worker_env,
        "CENTRALITY_CLICKHOUSE_URL": f"http://127.0.0.1:{free_port()}",  # nobody there
    }
    log = tmp_path / "sink.log"
    proc = subprocess.Popen([CLI, "sink"], env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT)
    try:
        # Retrying its migration: told once as the outage (the probe saw it first) or per try.
        retrying = ("migrate_failed", '"dependency":"clickhouse"')
        wait_until("a retry", lambda: any(w in log.read_text() for w in retrying), proc, log)
        took = stop_s(proc, sig, log)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert took <= STOP_BUDGET_S, f"stopping took {took:.1f}s"


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_sink_stops_in_time_with_an_insert_hanging_on_a_frozen_clickhouse(
    sig: signal.Signals,
    kafka_settings: KafkaSettings,
    own_clickhouse: LocalClickHouse,
    worker_env: dict[str, str],
    unique: str,
    tmp_path: Path,
) -> None:
    """The server accepts connections and never answers (SIGSTOP): inserts hang, not fail."""
    env = {
        **os.environ,
        **worker_env,
        "CENTRALITY_CLICKHOUSE_URL": own_clickhouse.url,
        "CENTRALITY_CLICKHOUSE_DATABASE": f"t_{unique}",
    }
    log = tmp_path / "sink.log"
    proc = subprocess.Popen([CLI, "sink"], env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT)
    pid = own_clickhouse.pid()
    assert pid is not None
    try:
        wait_until("the sink to start", lambda: "sink_started" in log.read_text(), proc, log)
        os.kill(pid, signal.SIGSTOP)
        asyncio.run(produce(kafka_settings, by_subject(kafka_settings, telemetry("f", 1))))
        time.sleep(3)  # fetched, handed to an insert process, which now waits on the server
        took = stop_s(proc, sig, log)
    finally:
        os.kill(pid, signal.SIGCONT)
        if proc.poll() is None:
            proc.kill()
    assert took <= STOP_BUDGET_S, f"stopping took {took:.1f}s"
