"""The console's application in this process, on loopback, over a fleet put in its reader by
hand (nothing read from Kafka): what the page is served and what it may change."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from aiohttp.test_utils import TestClient, TestServer
from pydantic import SecretStr

from centrality.bench.console_fleet import fleet
from centrality.client import Fleet as Client
from centrality.console.app import make_app
from centrality.console.guard import Guard
from centrality.console.live import Live
from centrality.console.settings import ConsoleSettings
from centrality.console.signer import Signer
from schemas.events import JobStatusChanged, NodeStatusChanged
from schemas.runtime.settings import KafkaSettings
from tests.support.operators import ALICE

TOKEN = "unit-token"
NODES = 200


def live_over(nodes: int = NODES) -> Live:
    live = Live(KafkaSettings(bootstrap="127.0.0.1:9"), refresh_s=0.5)
    for event in fleet(nodes, datetime.now(UTC)):
        if isinstance(event, NodeStatusChanged):
            live.fleet.nodes[event.subject] = event
        elif isinstance(event, JobStatusChanged):
            live.fleet.jobs[event.subject] = event
    live.version = 1
    return live


async def serve(signer: Signer) -> TestClient:
    settings = ConsoleSettings(port=0)
    app = make_app(settings, live_over(), Guard(SecretStr(TOKEN), 0), signer)
    client: TestClient = TestClient(TestServer(app, host="127.0.0.1"))
    await client.start_server()
    return client


@pytest.fixture(autouse=True)
def no_history(monkeypatch: pytest.MonkeyPatch) -> None:
    """ClickHouse where nothing listens: a timeline says it is unavailable, at once."""
    monkeypatch.setenv("CENTRALITY_CLICKHOUSE_URL", "http://127.0.0.1:9")


@pytest.fixture
async def acting() -> AsyncIterator[TestClient]:
    client = await serve(Signer(Client(KafkaSettings(bootstrap="127.0.0.1:9"), ALICE), "alice"))
    yield client
    await client.close()


@pytest.fixture
async def read_only() -> AsyncIterator[TestClient]:
    client = await serve(Signer(None, "mallory", "read-only: mallory is not trusted here"))
    yield client
    await client.close()


async def logged_in(client: TestClient) -> str:
    """Logs the client in with the token; the session's CSRF token."""
    answer = await client.get(f"/?token={TOKEN}", allow_redirects=False)
    assert answer.status == 303 and answer.headers["Location"] == "/"
    session = await (await client.get("/api/session")).json()
    return str(session["csrf"])
