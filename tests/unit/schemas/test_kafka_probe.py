"""The Kafka probe calls Kafka up only when a peer answers ApiVersions: not for a port that
merely accepts, nor for one that echoes (a loopback connection to itself), nor for an error."""

from __future__ import annotations

import asyncio

import pytest

from schemas.runtime.kafka_probe import kafka_answers
from schemas.runtime.settings import KafkaSettings
from tests.ports import free_port
from tests.support.fake_broker import Answer, api_versions, echo, serve


async def answers(answer: Answer, *, closed_first: bool = False) -> bool:
    server, address = await serve(answer)
    bootstrap = f"127.0.0.1:{free_port()},{address}" if closed_first else address
    try:
        return await asyncio.to_thread(kafka_answers(KafkaSettings(bootstrap=bootstrap)))
    finally:
        server.close()
        await server.wait_closed()


async def test_a_broker_answer_is_up_from_any_bootstrap_server() -> None:
    assert await answers(api_versions())
    assert await answers(api_versions(), closed_first=True)


@pytest.mark.parametrize(
    "answer",
    [echo, lambda request: None, api_versions(error_code=35)],
    ids=["itself", "accepts-and-closes", "error"],
)
async def test_what_is_not_a_broker_answering_is_down(answer: Answer) -> None:
    assert not await answers(answer)


def test_a_closed_port_is_down() -> None:
    assert not kafka_answers(KafkaSettings(bootstrap=f"127.0.0.1:{free_port()}"))()
