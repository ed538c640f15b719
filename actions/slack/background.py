"""Notifications sent beside the actions, never in their way.

An action records its outcome and goes on at once; its notification waits in a bounded queue
and is posted in order by one background task, retried with jittered backoff while Slack is
down or slow (anything but a `PermanentError`, such as a bad token or channel). When the queue
is full a new notification is dropped and logged (`notification_dropped`): a long Slack outage
must not grow the worker without bound, and the action results in Kafka tell the same story.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import structlog
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_not_exception_type,
    stop_after_delay,
    wait_random_exponential,
)

from actions.errors import PermanentError
from actions.slack.notifier import Message, Notifier
from actions.slack.settings import SlackSettings
from actions.threads import in_thread

log = structlog.get_logger("actions.slack")


class BackgroundNotifier:
    def __init__(self, notifier: Notifier, settings: SlackSettings | None = None) -> None:
        self.notifier = notifier
        self.settings = settings or SlackSettings()
        self.sent = 0
        self.dropped = 0
        self.lost = 0
        self._queue: asyncio.Queue[tuple[str, Message]] = asyncio.Queue(self.settings.queue_max)
        self._task: asyncio.Task[None] | None = None

    def submit(self, incident: str, message: Message) -> dict[str, Any]:
        """Queue a post into the incident's thread; say whether it was queued."""
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._post_forever(), name="notifications")
        try:
            self._queue.put_nowait((incident, message))
        except asyncio.QueueFull:
            self.dropped += 1
            log.error("notification_dropped", incident=incident, queued=self._queue.qsize())
            return {"queued": False, "incident": incident, "error": "notification queue full"}
        return {"queued": True, "incident": incident}

    async def join(self) -> None:
        """Until every queued notification was posted or given up."""
        await self._queue.join()

    async def close(self, timeout_s: float) -> None:
        """Post what is queued for at most `timeout_s`; the rest is logged as lost."""
        if self._task is None:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.join(), timeout_s)
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        if left := self._queue.qsize():
            log.warning("notifications_not_sent", count=left)

    async def _post_forever(self) -> None:
        while True:
            incident, message = await self._queue.get()
            try:
                await self._post(incident, message)
            finally:
                self._queue.task_done()

    async def _post(self, incident: str, message: Message) -> None:
        retrying = AsyncRetrying(
            retry=retry_if_not_exception_type(PermanentError),
            wait=wait_random_exponential(
                multiplier=self.settings.retry_initial_s, max=self.settings.retry_max_s
            ),
            stop=stop_after_delay(self.settings.give_up_after_s),
            before_sleep=_log_retry(incident),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    await in_thread(self.notifier.post, incident, message)
        except Exception as exc:  # given up: the action's result is in Kafka regardless
            self.lost += 1
            log.error("notification_lost", incident=incident, error=f"{type(exc).__name__}: {exc}")
            return
        self.sent += 1


def _log_retry(incident: str) -> Any:
    def before_sleep(state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        wait_s = state.next_action.sleep if state.next_action else 0.0
        log.warning(
            "notification_retry",
            incident=incident,
            attempt=state.attempt_number,
            retry_in_s=round(wait_s, 2),
            error=f"{type(error).__name__}: {error}"[:300],
        )

    return before_sleep
