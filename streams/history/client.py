"""One way to open a clickhouse-connect client from settings."""

from __future__ import annotations

import clickhouse_connect
from clickhouse_connect.driver.client import Client

from streams.history.settings import ClickHouseSettings


def connect(
    settings: ClickHouseSettings, *, database: str | None = None, shared: bool = False
) -> Client:
    """`shared`: a client threads use at once, so without a session (ClickHouse refuses
    concurrent queries in one session); its temporary tables and settings would not last."""
    password = settings.password.get_secret_value() if settings.password else ""
    return clickhouse_connect.get_client(
        host=settings.host,
        port=settings.port,
        secure=settings.secure,
        username=settings.user,
        password=password,
        database=settings.database if database is None else database,
        verify=settings.verify,
        ca_cert=str(settings.ca_cert) if settings.ca_cert else None,
        connect_timeout=settings.connect_timeout_s,
        send_receive_timeout=settings.send_receive_timeout_s,
        autogenerate_session_id=False if shared else None,
    )
