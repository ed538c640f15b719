"""The start-up canary: the private names the transport patches are there as expected, and an
upgrade that changes one stops the worker with a message that names it."""

from __future__ import annotations

import pytest
from faust.transport.drivers import aiokafka as driver

from streams.faust import canary as faust_canary


def test_the_installed_libraries_are_what_the_transport_was_written_for() -> None:
    assert faust_canary.check() == []
    faust_canary.require()


def test_a_changed_signature_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    async def perform_seek(self: object, partitions: object) -> None: ...

    monkeypatch.setattr(driver.Consumer, "perform_seek", perform_seek)
    with pytest.raises(faust_canary.FaustApiChanged) as raised:
        faust_canary.require()
    message = str(raised.value)
    assert "Consumer.perform_seek takes ('self', 'partitions'), expected ('self',)" in message
    assert "faust-streaming" in message and "streams/faust/README.md" in message


def test_a_vanished_name_and_a_vanished_source_line_are_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delattr(driver.AIOKafkaConsumerThread, "_create_worker_consumer")
    problems = faust_canary.check(
        source={"aiokafka.consumer.consumer:AIOKafkaConsumer.start": "self._no_such_attribute"}
    )
    gone = "faust.transport.drivers.aiokafka:AIOKafkaConsumerThread._create_worker_consumer is gone"
    assert gone in problems
    assert any("no longer contains 'self._no_such_attribute'" in p for p in problems)
