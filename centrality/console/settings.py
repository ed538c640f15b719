"""`CENTRALITY_CONSOLE_*`: where the console listens, and how people log in to it."""

from __future__ import annotations

import ipaddress
from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


class ConsoleSettings(BaseSettings):
    """`CENTRALITY_CONSOLE_*`: the web console (`centrality console`). It listens on loopback
    unless told otherwise; anywhere else it needs TLS and a login token."""

    model_config = SettingsConfigDict(env_prefix="CENTRALITY_CONSOLE_", extra="ignore")

    host: str = Field(
        default="127.0.0.1",
        description="The address it listens on. Anything but loopback needs `tls_cert_file`, "
        "`tls_key_file` and `token`.",
    )
    port: int = Field(default=8470, ge=0, le=65535, description="Its port (0: any free one).")
    token: SecretStr | None = Field(
        default=None,
        description="The login token people give once per browser. Unset: a new one each start, "
        "printed with the address (never logged).",
    )
    tls_cert_file: Path | None = Field(
        default=None, description="PEM certificate (chain) to serve HTTPS with."
    )
    tls_key_file: Path | None = Field(default=None, description="Its PEM private key.")
    refresh_s: float = Field(
        default=0.5,
        gt=0,
        le=10,
        description="How often the status and silences topics are read for what changed.",
    )
    timeline_days: float = Field(
        default=7.0, gt=0, description="How far back a node's or job's timeline reaches."
    )

    @property
    def tls(self) -> bool:
        return self.tls_cert_file is not None and self.tls_key_file is not None

    def address(self, port: int | None = None) -> str:
        """Where it listens (on `port` when it chose one itself)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port if port is None else port}/"

    def loopback(self) -> bool:
        if self.host in LOOPBACK_NAMES:
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    def refusal(self) -> str | None:
        """Why the console must not listen as configured, or None."""
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            return "CENTRALITY_CONSOLE_TLS_CERT_FILE and _TLS_KEY_FILE go together"
        if self.loopback():
            return None
        missing = [
            what
            for what, ok in (("TLS (CERT_FILE, KEY_FILE)", self.tls), ("TOKEN", self.token))
            if not ok
        ]
        if missing:
            return (
                f"listening on {self.host} (not loopback) needs CENTRALITY_CONSOLE_"
                + " and CENTRALITY_CONSOLE_".join(missing)
            )
        return None
