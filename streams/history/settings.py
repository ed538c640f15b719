"""Where history lives (`CENTRALITY_CLICKHOUSE_*`)."""

from pathlib import Path
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from schemas.runtime.local_stack import LocalStackSettings

# Package data, so a wheel carries them as the source tree does.
DDL_DIR = Path(__file__).resolve().parent / "ddl"


class ClickHouseSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CENTRALITY_CLICKHOUSE_", extra="ignore")

    url: str = Field(
        default_factory=lambda: LocalStackSettings().clickhouse_url,
        description="ClickHouse HTTP URL; unset, the local stack's (`CENTRALITY_STACK_HOST`, "
        "`_CLICKHOUSE_PORT`, `_PORT_OFFSET`). Set to another address, it names an existing one: "
        "`up` then starts none.",
    )
    user: str = Field(default="default", description="ClickHouse user.")
    password: SecretStr | None = Field(default=None, description="ClickHouse password.")
    ca_cert: Path | None = Field(
        default=None,
        description="PEM CA bundle an `https` server's certificate is checked against; "
        "the system's CAs if unset.",
    )
    verify: bool = Field(
        default=True,
        description="Check an `https` server's certificate and name. Off only for a test server.",
    )
    database: str = Field(default="centrality", description="Database holding the history.")
    connect_timeout_s: float = Field(
        default=10.0, gt=0, description="How long a client waits for a connection to open."
    )
    send_receive_timeout_s: float = Field(
        default=300.0,
        gt=0,
        description="How long a client waits on an open connection (an insert, a query).",
    )
    migrations_dir: Path = Field(default=DDL_DIR, description="Ordered DDL files to apply.")
    cluster: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z_][A-Za-z0-9_-]*$",
        description="A cluster of the servers' `remote_servers`: migrations then create "
        "replicated tables on every node and Distributed tables over them (streams/history/"
        "cluster.py). Unset: one server, plain MergeTree tables.",
    )
    ttl_days: int = Field(
        default=90, ge=1, description="Days history is kept (events, triggers, actions, nodes)."
    )

    @field_validator("url")
    @classmethod
    def _an_http_url(cls, value: str) -> str:
        """Said here, in one line, not as a crash of the first query."""
        parts = urlsplit(value)
        try:
            port = parts.port
        except ValueError:
            raise ValueError(f"{value!r} has a port that is not a number") from None
        if parts.scheme not in ("http", "https") or not parts.hostname or port == 0:
            raise ValueError(f"{value!r} is not an http(s)://host:port URL")
        return value

    samples_ttl_days: int = Field(
        default=14, ge=1, description="Days high-volume rows are kept (GPU samples, log lines)."
    )

    @property
    def external(self) -> bool:
        return "url" in self.model_fields_set

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname or "127.0.0.1"

    @property
    def port(self) -> int:
        parts = urlsplit(self.url)
        return parts.port or (8443 if parts.scheme == "https" else 8123)

    @property
    def secure(self) -> bool:
        return urlsplit(self.url).scheme == "https"
