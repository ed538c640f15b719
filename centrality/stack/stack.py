"""The local stack: the real Kafka broker and ClickHouse engine, started and stopped together.

Whatever the user pointed us at (`CENTRALITY_KAFKA_BOOTSTRAP`, `CENTRALITY_CLICKHOUSE_URL`) is used
as it is and never started or stopped here, unless it is the local stack's own address: clients
told where this stack serves still mean this stack.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from centrality.stack.clickhouse import LocalClickHouse
from centrality.stack.kafka import LocalKafka, wait_ready
from centrality.stack.process import ServiceError
from centrality.stack.settings import StackSettings
from schemas.runtime.admin import CatalogReport, ensure_topics
from schemas.runtime.settings import KafkaSettings
from streams.history.migrations import migrate
from streams.history.settings import ClickHouseSettings

Progress = Callable[[str], None]


@dataclass(frozen=True)
class ServiceStatus:
    name: str
    address: str
    managed: bool
    running: bool
    pid: int | None


@dataclass(frozen=True)
class UpReport:
    catalog: CatalogReport
    migrations_applied: list[int]


class Stack:
    def __init__(
        self,
        stack: StackSettings | None = None,
        kafka: KafkaSettings | None = None,
        clickhouse: ClickHouseSettings | None = None,
    ) -> None:
        self.settings = stack or StackSettings()
        self.local_kafka = LocalKafka(self.settings)
        self.local_clickhouse = LocalClickHouse(self.settings)
        given_kafka = kafka or KafkaSettings()
        given_ch = clickhouse or ClickHouseSettings()
        self._kafka_managed = (
            not given_kafka.external or given_kafka.bootstrap == self.local_kafka.bootstrap
        )
        self._clickhouse_managed = (
            not given_ch.external or given_ch.url.rstrip("/") == self.local_clickhouse.url
        )
        # The effective settings every worker gets: the user's services, or ours.
        self.kafka = (
            given_kafka.model_copy(update={"bootstrap": self.local_kafka.bootstrap})
            if self._kafka_managed
            else given_kafka
        )
        self.clickhouse = (
            given_ch.model_copy(
                update={
                    "url": self.local_clickhouse.url,
                    "password": self.settings.clickhouse_password,
                }
            )
            if self._clickhouse_managed
            else given_ch
        )

    def up(self, progress: Progress = lambda _: None) -> UpReport:
        if self._kafka_managed:
            progress(f"starting Kafka on {self.local_kafka.bootstrap}")
            self.local_kafka.start()
        else:
            progress(f"using Kafka at {self.kafka.bootstrap}")
            try:
                asyncio.run(wait_ready(self.kafka, self.settings.start_timeout_s))
            except ServiceError as exc:
                raise ServiceError(
                    f"{exc}: CENTRALITY_KAFKA_BOOTSTRAP names a Kafka of yours, which `up` never "
                    f"starts (this stack's is {self.local_kafka.bootstrap}; "
                    "CENTRALITY_STACK_PORT_OFFSET moves it, its clients and metrics together)"
                ) from None
        progress("creating the topic catalog")
        catalog = asyncio.run(ensure_topics(self.kafka))
        if self._clickhouse_managed:
            progress(f"starting ClickHouse on {self.local_clickhouse.url}")
            self.local_clickhouse.start()
        else:
            progress(f"using ClickHouse at {self.clickhouse.url}")
        progress("applying history migrations")
        applied = migrate(self.clickhouse)
        return UpReport(catalog=catalog, migrations_applied=applied)

    def down(self, progress: Progress = lambda _: None) -> None:
        if self._clickhouse_managed:
            progress("stopping ClickHouse")
            self.local_clickhouse.stop()
        if self._kafka_managed:
            progress("stopping Kafka")
            self.local_kafka.stop()

    def env(self) -> dict[str, str]:
        """Environment that points a worker process at this stack."""
        env = {
            "CENTRALITY_KAFKA_BOOTSTRAP": self.kafka.bootstrap,
            "CENTRALITY_KAFKA_TOPIC_PREFIX": self.kafka.topic_prefix,
            "CENTRALITY_CLICKHOUSE_URL": self.clickhouse.url,
            "CENTRALITY_CLICKHOUSE_DATABASE": self.clickhouse.database,
            "CENTRALITY_STREAMS_DATA_DIR": str(self.settings.state_dir / "streams"),
        }
        if self.clickhouse.password is not None:
            env["CENTRALITY_CLICKHOUSE_PASSWORD"] = self.clickhouse.password.get_secret_value()
        if self.clickhouse.ca_cert is not None:
            env["CENTRALITY_CLICKHOUSE_CA_CERT"] = str(self.clickhouse.ca_cert)
        return env

    def status(self) -> list[ServiceStatus]:
        kafka_pid = self.local_kafka.pid() if self._kafka_managed else None
        ch_pid = self.local_clickhouse.pid() if self._clickhouse_managed else None
        return [
            ServiceStatus(
                "kafka",
                self.kafka.bootstrap,
                self._kafka_managed,
                self.local_kafka.running() if self._kafka_managed else _reachable_kafka(self.kafka),
                kafka_pid,
            ),
            ServiceStatus(
                "clickhouse",
                self.clickhouse.url,
                self._clickhouse_managed,
                self.local_clickhouse.running()
                if self._clickhouse_managed
                else _reachable_ch(self.clickhouse),
                ch_pid,
            ),
        ]


def _reachable_kafka(kafka: KafkaSettings) -> bool:
    try:
        asyncio.run(wait_ready(kafka, 3.0))
    except Exception:
        return False
    return True


def _reachable_ch(settings: ClickHouseSettings) -> bool:
    from centrality.stack.process import port_open

    return port_open(settings.host, settings.port)
