"""Faust's broker credentials from the `KafkaSettings` every client of ours uses.

Faust builds its own aiokafka clients (consumer, producer, admin) from `broker_credentials`;
these carry the same TLS context and SASL user as `schemas.runtime.kafka_clients` gives ours.
"""

from __future__ import annotations

import faust
from faust.types.auth import CredentialsT

from schemas.runtime.kafka_clients import ssl_context
from schemas.runtime.settings import KafkaSettings


def broker_credentials(kafka: KafkaSettings) -> CredentialsT | None:
    context = ssl_context(kafka)
    if kafka.sasl:
        assert kafka.sasl_password is not None  # KafkaSettings validates it
        # With a context Faust speaks SASL_SSL, without one SASL_PLAINTEXT.
        return faust.SASLCredentials(
            username=kafka.sasl_username,
            password=kafka.sasl_password.get_secret_value(),
            ssl_context=context,
            mechanism=kafka.sasl_mechanism,
        )
    if context is not None:
        return faust.SSLCredentials(context)
    return None
