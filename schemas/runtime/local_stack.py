"""Where the local stack serves and keeps its state, read by its servers (`centrality up`) and by
every client, worker and metrics endpoint that is given no address of its own.

So one setting moves a whole stack: `CENTRALITY_STACK_PORT_OFFSET` shifts Kafka, ClickHouse, the
workers' metrics ports and the state directory together, and a second stack runs beside the first
on one machine with nothing else set (`docs/local-stack.md`).
"""

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

KAFKA_PORT = 9092
KAFKA_CONTROLLER_PORT = 9093
CLICKHOUSE_PORT = 8123
# Offsets step by 100: two stacks' ports then never meet (the defaults differ by 1, 89-97, 969,
# 970 and 1058-1066, none a multiple of 100). The highest, metrics' 9189, stays below Linux's
# ephemeral ports (32768 up): a listener there can find its port taken by some outgoing
# connection's, the broker's own to its controller included.
PORT_STEP = 100
MAX_PORT_OFFSET = 23_500


def _state_dir(port_offset: int) -> Path:
    name = f"centrality-{port_offset}" if port_offset else "centrality"
    return Path.home() / ".local" / "share" / name


class LocalStackSettings(BaseSettings):
    """`CENTRALITY_STACK_*`: where the local stack serves and keeps its state; every client and
    worker given no address of its own uses these (`CENTRALITY_KAFKA_BOOTSTRAP`,
    `CENTRALITY_CLICKHOUSE_URL` unset)."""

    model_config = SettingsConfigDict(env_prefix="CENTRALITY_STACK_", extra="ignore")

    port_offset: int = Field(
        default=0,
        ge=0,
        le=MAX_PORT_OFFSET,
        multiple_of=PORT_STEP,
        description="Added to every port of the local stack, to the address its clients use by "
        "default and to the workers' metrics ports, with its state in "
        "`~/.local/share/centrality-<offset>`: a second stack beside the first with this alone "
        "(100: Kafka 9192, ClickHouse 8223, metrics 9281-9289). A multiple of 100.",
    )
    host: str = Field(default="127.0.0.1", description="Address both services bind to.")
    kafka_port: int = Field(
        default_factory=lambda data: KAFKA_PORT + data["port_offset"],
        description="Kafka client listener port (9092 + `port_offset` unless set).",
    )
    clickhouse_port: int = Field(
        default_factory=lambda data: CLICKHOUSE_PORT + data["port_offset"],
        description="HTTP port of the local ClickHouse server (8123 + `port_offset` unless set).",
    )
    state_dir: Path = Field(
        default_factory=lambda data: _state_dir(data["port_offset"]),
        description="Data of the local broker and ClickHouse, pid files, logs; kept. The streams "
        "worker's tables and the Emitter's spool default to directories in it.",
    )

    @property
    def kafka_bootstrap(self) -> str:
        return f"{self.host}:{self.kafka_port}"

    @property
    def clickhouse_url(self) -> str:
        return f"http://{self.host}:{self.clickhouse_port}"
