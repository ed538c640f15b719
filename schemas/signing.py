"""Trigger signatures: action workers act only on decisions the streams app (or an operator with
the key) signed. An HMAC-SHA256 of the message value travels in a Kafka header, so the value
stays the plain contract that every other consumer reads.

Anyone who can produce to the triggers topic could otherwise drain nodes; Kafka ACLs are the
first line (docs/security.md), the signature the second, so a mis-set ACL alone never moves a node.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable
from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

SIGNATURE_HEADER = "centrality-signature"
_SCHEME = b"hmac-sha256="
DEFAULT_KEY_FILE = Path("~/.local/share/centrality/trigger.key")  # expanded when read


class MissingKeyError(RuntimeError):
    """No signing key is configured where one is required."""


class SigningSettings(BaseSettings):
    """`CENTRALITY_TRIGGER_*`: the key that signs triggers (shared by streams and actions)."""

    model_config = SettingsConfigDict(env_prefix="CENTRALITY_TRIGGER_", extra="ignore")

    key: SecretStr | None = Field(default=None, description="The signing key itself.")
    key_file: Path = Field(
        default=DEFAULT_KEY_FILE,
        description="Read the key from here when `key` is unset; `centrality up` creates it.",
    )

    def resolve(self) -> SecretStr | None:
        if self.key is not None and self.key.get_secret_value():
            return self.key
        try:
            text = self.key_file.expanduser().read_text().strip()
        except FileNotFoundError:
            return None
        return SecretStr(text) if text else None

    def require(self, who: str) -> SecretStr:
        key = self.resolve()
        if key is None:
            raise MissingKeyError(
                f"{who} needs the trigger signing key: set CENTRALITY_TRIGGER_KEY, or "
                f"CENTRALITY_TRIGGER_KEY_FILE (default {DEFAULT_KEY_FILE}; `centrality up` "
                "creates it for the local stack)"
            )
        return key


def ensure_key_file(path: Path) -> Path:
    """Create a random key file (mode 0600) unless one exists; the local stack's default key."""
    path = path.expanduser()
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600)
        path.write_text(secrets.token_urlsafe(32) + "\n")
    return path


def signature(value: bytes, key: SecretStr) -> bytes:
    digest = hmac.new(key.get_secret_value().encode(), value, hashlib.sha256).hexdigest()
    return _SCHEME + digest.encode()


def signed_headers(value: bytes, key: SecretStr) -> list[tuple[str, bytes]]:
    return [(SIGNATURE_HEADER, signature(value, key))]


def verify(value: bytes, headers: Iterable[tuple[str, bytes]] | None, key: SecretStr) -> bool:
    """True when one signature header matches `value` under `key`."""
    expected = signature(value, key)
    return any(
        name == SIGNATURE_HEADER and hmac.compare_digest(bytes(got), expected)
        for name, got in (headers or ())
    )
