import asyncio

from structlog.testing import capture_logs

from collectors.loop import poll_forever
from tests.support.clock import ManualClock


async def test_polls_every_poll_s_through_failures_until_stopped() -> None:
    clock = ManualClock()
    polled: list[float] = []

    async def poll_once() -> None:
        polled.append(clock.now())
        if len(polled) == 2:
            raise ConnectionError("scheduler away")

    stop = asyncio.Event()
    with capture_logs() as logs:
        task = asyncio.create_task(poll_forever(poll_once, 15.0, stop, "test", clock))
        await clock.settle(1)
        await clock.advance(45)
        stop.set()
        await clock.finish(task)
    assert polled == [0, 15, 30, 45]
    failed = [(e["collector"], e["error"]) for e in logs if e["event"] == "poll_failed"]
    assert failed == [("test", "scheduler away")]
