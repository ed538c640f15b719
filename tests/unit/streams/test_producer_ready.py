"""Fix 10 of streams/faust/transport.py: a send does not give up the event loop to learn that the
producer is running. The changelog buffer's one sender asks for every record; each loop turn it
gave away went to the agents, and the sender fell behind the table changes."""

from __future__ import annotations

import asyncio

import faust

from streams.faust.transport import App

SENDS = 1_000


class _RunningProducer:
    started = True

    async def maybe_start(self) -> None:
        return None


async def _turns_given_away(app: faust.App) -> int:
    app.producer = _RunningProducer()  # type: ignore[assignment]
    turns = 0

    async def count() -> None:
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    counter = asyncio.create_task(count())
    await asyncio.sleep(0)
    before = turns
    try:
        for _ in range(SENDS):
            assert await app.maybe_start_producer() is app.producer
        return turns - before
    finally:
        counter.cancel()


def _app(cls: type[faust.App]) -> faust.App:
    return cls(
        "producer-ready", broker="kafka://127.0.0.1:1", autodiscover=False, web_enabled=False
    )


async def test_a_running_producer_is_handed_over_without_a_loop_turn() -> None:
    assert await _turns_given_away(_app(App)) == 0


async def test_faust_alone_gives_the_loop_away_on_every_send() -> None:
    # What fix 10 is for; if a Faust upgrade stops yielding here, the fix can go.
    assert await _turns_given_away(_app(faust.App)) >= SENDS
