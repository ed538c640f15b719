"""One setting moves a whole local stack: its servers, the addresses its clients use, the workers'
metrics ports and its state, so a second stack runs beside the first on one machine."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from centrality.entry import CentralityGroup  # noqa: F401  (registers every explainer)
from centrality.errors import USAGE, explain
from centrality.stack.settings import StackSettings
from centrality.stack.stack import Stack
from schemas.runtime.emitter.settings import EmitterSettings
from schemas.runtime.local_stack import MAX_PORT_OFFSET, PORT_STEP
from schemas.runtime.metrics.server import DEFAULT_PORTS, MetricsSettings
from schemas.runtime.settings import KafkaSettings
from streams.history.settings import ClickHouseSettings
from streams.settings import StreamsSettings


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for variable in (
        "CENTRALITY_KAFKA_BOOTSTRAP",
        "CENTRALITY_CLICKHOUSE_URL",
        "CENTRALITY_METRICS_PORTS",
        "CENTRALITY_STREAMS_DATA_DIR",
        "CENTRALITY_EMITTER_SPOOL_DIR",
    ):
        monkeypatch.delenv(variable, raising=False)
    for variable in StackSettings.model_fields:
        monkeypatch.delenv(f"CENTRALITY_STACK_{variable.upper()}", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def test_the_offset_alone_moves_servers_clients_metrics_and_state(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CENTRALITY_STACK_PORT_OFFSET", "100")
    stack = StackSettings()
    assert (stack.kafka_port, stack.kafka_controller_port, stack.clickhouse_port) == (
        9192,
        9193,
        8223,
    )
    state = home / ".local" / "share" / "centrality-100"
    assert stack.state_dir == state
    assert KafkaSettings().bootstrap == "127.0.0.1:9192"
    assert ClickHouseSettings().url == "http://127.0.0.1:8223"
    metrics = MetricsSettings()
    for worker, port in DEFAULT_PORTS.items():
        assert metrics.address(worker) == ("127.0.0.1", port + 100)
    assert StreamsSettings().data_dir == state / "streams"
    assert EmitterSettings().spool_dir == state / "spool"
    # The clients' addresses are the local stack's own: it is managed here, not "external".
    for service in Stack().status():
        assert service.managed and not service.running
        assert service.address in ("127.0.0.1:9192", "http://127.0.0.1:8223")


def test_without_the_offset_everything_is_where_it_always_was(home: Path) -> None:
    stack = StackSettings()
    assert (stack.kafka_port, stack.kafka_controller_port, stack.clickhouse_port) == (
        9092,
        9093,
        8123,
    )
    assert stack.state_dir == home / ".local" / "share" / "centrality"
    assert KafkaSettings().bootstrap == "127.0.0.1:9092"
    assert ClickHouseSettings().url == "http://127.0.0.1:8123"
    assert MetricsSettings().address("sink") == ("127.0.0.1", 9183)
    assert StreamsSettings().data_dir == stack.state_dir / "streams"


def test_a_servers_port_moves_its_clients_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CENTRALITY_STACK_KAFKA_PORT", "19092")
    monkeypatch.setenv("CENTRALITY_STACK_CLICKHOUSE_PORT", "18123")
    assert KafkaSettings().bootstrap == "127.0.0.1:19092"
    assert ClickHouseSettings().url == "http://127.0.0.1:18123"


def test_client_addresses_set_to_the_local_stacks_own_still_mean_the_local_stack(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Set before `up`: `up` starts it; set after: `status` and `down` know it as local.
    monkeypatch.setenv("CENTRALITY_STACK_PORT_OFFSET", "200")
    monkeypatch.setenv("CENTRALITY_KAFKA_BOOTSTRAP", "127.0.0.1:9292")
    monkeypatch.setenv("CENTRALITY_CLICKHOUSE_URL", "http://127.0.0.1:8323/")
    assert all(service.managed for service in Stack().status())


def test_what_is_set_explicitly_is_not_moved(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CENTRALITY_STACK_PORT_OFFSET", "100")
    monkeypatch.setenv("CENTRALITY_KAFKA_BOOTSTRAP", "kafka.example:9092")
    monkeypatch.setenv("CENTRALITY_METRICS_PORTS", '{"sink": 7000}')
    assert KafkaSettings().bootstrap == "kafka.example:9092" and KafkaSettings().external
    metrics = MetricsSettings()
    assert metrics.address("sink") == ("127.0.0.1", 7000)
    assert metrics.address("streams") == ("127.0.0.1", 9281)


@pytest.mark.parametrize("offset", [-100, 150, MAX_PORT_OFFSET + PORT_STEP])
def test_an_offset_that_could_collide_or_overflow_is_refused(offset: int) -> None:
    with pytest.raises(ValidationError, match="port_offset"):
        StackSettings(port_offset=offset)


def _ports(offset: int) -> set[int]:
    stack = StackSettings(port_offset=offset)
    ports = {stack.kafka_port, stack.kafka_controller_port, stack.clickhouse_port}
    return ports | {port + offset for port in DEFAULT_PORTS.values()}


def test_no_two_stacks_ports_ever_meet() -> None:
    offsets = range(0, MAX_PORT_OFFSET + 1, PORT_STEP)
    taken: dict[int, int] = {}
    for offset in offsets:
        for port in _ports(offset):
            assert port not in taken, f"offsets {taken.get(port)} and {offset} share {port}"
            assert port < 65536
            taken[port] = offset


def test_a_bad_offset_is_said_once_naming_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CENTRALITY_STACK_PORT_OFFSET", "150")
    with pytest.raises(ValidationError) as caught:
        KafkaSettings()
    failure = explain(caught.value)
    assert failure is not None and failure.code == USAGE
    said = "CENTRALITY_STACK_PORT_OFFSET='150': Input should be a multiple of 100"
    assert failure.problem == said
