"""Operators: the people who command Centrality by hand, each with an Ed25519 key pair.

The CLI signs an operator's command (a trigger naming its operator) or silence with the private
key in `CENTRALITY_OPERATOR_KEY_FILE`; workers hold only public keys, in `CENTRALITY_OPERATORS`
(or the file `CENTRALITY_OPERATORS_FILE`), with the clusters each operator may touch. Unlike the
streams app's shared trigger key, nobody who can read a worker's settings can sign as anyone,
and every command names who gave it.

The signature travels in the same header as the streams app's (`centrality-signature`, scheme
`ed25519=`), the operator's name in `centrality-operator`; the value stays the plain contract.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from schemas.signing import SIGNATURE_HEADER

OPERATOR_HEADER = "centrality-operator"
_SCHEME = b"ed25519="
STATE_DIR = Path("~/.local/share/centrality")
DEFAULT_KEY_FILE = STATE_DIR / "operator.key"
DEFAULT_OPERATORS_FILE = STATE_DIR / "operators.json"
ANY_CLUSTER = "*"


class OperatorKeyError(ValueError):
    """An operator key file that is missing or unreadable: said in one line, never a traceback."""


class Unauthenticated(Exception):
    """A command or silence whose signature does not prove who sent it."""


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _unb64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"{what} is not base64") from None


@dataclass(frozen=True)
class OperatorKey:
    """An operator's name and private key (the CLI's side)."""

    name: str
    private: Ed25519PrivateKey

    @classmethod
    def generate(cls, name: str) -> OperatorKey:
        return cls(name, Ed25519PrivateKey.generate())

    @property
    def public_key(self) -> str:
        """The public key as `CENTRALITY_OPERATORS` takes it: base64 of its 32 raw bytes."""
        return _b64(self.private.public_key().public_bytes_raw())

    def save(self, path: Path) -> Path:
        """Write the key file (mode 0600), refusing to overwrite one."""
        path = path.expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        doc = {"operator": self.name, "private_key": _b64(self.private.private_bytes_raw())}
        # Created 0600 at once (no moment readable by others); never replaces a key in use.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(doc) + "\n")
        return path

    @classmethod
    def load(cls, path: Path) -> OperatorKey:
        path = path.expanduser()
        try:
            doc = json.loads(path.read_text())
            raw = _unb64(doc["private_key"], "private_key")
            return cls(str(doc["operator"]), Ed25519PrivateKey.from_private_bytes(raw))
        except FileNotFoundError:
            raise OperatorKeyError(
                f"no operator key at {path}: `centrality operator keygen NAME` writes one "
                "(set CENTRALITY_OPERATOR_KEY_FILE to use another)"
            ) from None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise OperatorKeyError(f"operator key {path} is unreadable: {exc}") from None

    def headers(self, value: bytes) -> list[tuple[str, bytes]]:
        """The headers that prove this operator sent `value`."""
        signature = _SCHEME + _b64(self.private.sign(value)).encode()
        return [(OPERATOR_HEADER, self.name.encode()), (SIGNATURE_HEADER, signature)]


class Operator(BaseModel):
    """An operator the workers trust: the public key, and the clusters they may command."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    public_key: str = Field(description="Base64 of the Ed25519 public key (32 bytes).")
    clusters: tuple[str, ...] = Field(
        default=(ANY_CLUSTER,), description="Clusters this operator may command; `*`: any."
    )

    @field_validator("public_key")
    @classmethod
    def _is_a_key(cls, value: str) -> str:
        if len(_unb64(value, "public_key")) != 32:
            raise ValueError("public_key must be 32 bytes (an Ed25519 public key)")
        return value

    def may_touch(self, cluster: str) -> bool:
        return ANY_CLUSTER in self.clusters or cluster in self.clusters

    def verifies(self, value: bytes, signature: bytes) -> bool:
        if not signature.startswith(_SCHEME):
            return False
        try:
            key = Ed25519PublicKey.from_public_bytes(_unb64(self.public_key, "public_key"))
            key.verify(_unb64(signature[len(_SCHEME) :].decode(), "signature"), value)
        except (InvalidSignature, ValueError, UnicodeDecodeError):
            return False
        return True


class OperatorSettings(BaseSettings):
    """`CENTRALITY_OPERATOR_KEY_FILE` (who this CLI signs as) and `CENTRALITY_OPERATORS` (whom
    the workers trust)."""

    model_config = SettingsConfigDict(env_prefix="CENTRALITY_", extra="ignore")

    operator_key_file: Path = Field(
        default=DEFAULT_KEY_FILE,
        description="The key file the CLI signs commands and silences with "
        "(`centrality operator keygen` writes one; `centrality up` makes a local one).",
    )
    operators: dict[str, Operator] | None = Field(
        default=None,
        description='Operators the workers trust, JSON: {"alice": {"public_key": "…", '
        '"clusters": ["a"]}}. Unset: read from `operators_file`.',
    )
    operators_file: Path = Field(
        default=DEFAULT_OPERATORS_FILE,
        description="Where the trusted operators are read from when `operators` is unset "
        "(the same JSON; `centrality up` trusts the local operator there). No file: nobody.",
    )

    def key(self) -> OperatorKey:
        return OperatorKey.load(self.operator_key_file)

    def trusted(self) -> dict[str, Operator]:
        if self.operators is not None:
            return dict(self.operators)
        path = self.operators_file.expanduser()
        try:
            doc = json.loads(path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise OperatorKeyError(f"operators file {path} is unreadable: {exc}") from None
        try:
            return {name: Operator.model_validate(spec) for name, spec in doc.items()}
        except (AttributeError, ValueError) as exc:
            raise OperatorKeyError(f"operators file {path}: {exc}") from None


def trust(path: Path, name: str, operator: Operator) -> None:
    """Add (or replace) one trusted operator in an operators file."""
    path = path.expanduser()
    doc = json.loads(path.read_text()) if path.exists() else {}
    doc[name] = operator.model_dump(mode="json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1) + "\n")


def header(headers: Iterable[tuple[str, bytes]] | None, name: str) -> bytes | None:
    return next((bytes(v) for k, v in headers or () if k == name), None)


def signed_by_operator(headers: Iterable[tuple[str, bytes]] | None) -> bool:
    """Whether a record claims an operator's signature (it may still be a forgery)."""
    return header(headers, OPERATOR_HEADER) is not None


def authenticate(
    value: bytes, headers: Iterable[tuple[str, bytes]] | None, trusted: dict[str, Operator]
) -> tuple[str, Operator]:
    """Who signed `value`, among the trusted; `Unauthenticated` says why nobody did."""
    headers = list(headers or ())
    raw_name = header(headers, OPERATOR_HEADER)
    if raw_name is None:
        raise Unauthenticated("no operator named (centrality-operator header)")
    name = raw_name.decode(errors="replace")[:256]
    operator = trusted.get(name)
    if operator is None:
        raise Unauthenticated(f"unknown operator {name!r}")
    signatures = [v for k, v in headers if k == SIGNATURE_HEADER]
    if not any(operator.verifies(value, bytes(s)) for s in signatures):
        raise Unauthenticated(f"bad signature for operator {name!r}")
    return name, operator


def ensure_local_operator(settings: OperatorSettings) -> None:
    """The local stack's operator: a key named after this user unless one exists, trusted on
    any cluster in the operators file (only where no `CENTRALITY_OPERATORS` overrides it)."""
    path = settings.operator_key_file.expanduser()
    key = OperatorKey.load(path) if path.exists() else OperatorKey.generate(_user())
    if not path.exists():
        key.save(path)
    if settings.operators is None and key.name not in settings.trusted():
        trust(settings.operators_file, key.name, Operator(public_key=key.public_key))


def _user() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "local"
