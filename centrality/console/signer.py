"""Whose authority the console's commands carry: the key of the person who runs it, as the
CLI's (`CENTRALITY_OPERATOR_KEY_FILE`). Without a key, or with one the operators trusted here do
not include, the console is read-only and says why."""

from __future__ import annotations

from dataclasses import dataclass

from centrality.client import Fleet as Client
from schemas.operators import OperatorKeyError, OperatorSettings
from schemas.runtime.settings import KafkaSettings


@dataclass(frozen=True)
class Signer:
    client: Client | None  # None: read-only
    operator: str | None
    why_read_only: str | None = None
    note: str | None = None  # what cannot be checked here

    @property
    def can_act(self) -> bool:
        return self.client is not None


def signer(kafka: KafkaSettings, settings: OperatorSettings | None = None) -> Signer:
    settings = settings or OperatorSettings()
    try:
        key = settings.key()
        trusted = settings.trusted()
    except OperatorKeyError as exc:
        return Signer(None, None, f"read-only: {exc}")
    where = (
        "CENTRALITY_OPERATORS"
        if settings.operators is not None
        else str(settings.operators_file.expanduser())
    )
    if trusted:
        known = trusted.get(key.name)
        if known is None or known.public_key != key.public_key:
            return Signer(
                None,
                key.name,
                f"read-only: operator {key.name}'s key ({settings.operator_key_file}) is not "
                f"among the operators trusted in {where}; the action workers would refuse what "
                "it signs (`centrality operator trust` adds it)",
            )
    note = None if trusted else f"no operators trusted in {where} to check the key against"
    return Signer(Client(kafka, key), key.name, note=note)
