"""The notifier: every message to Slack, paced per channel, beside the actions, never in their way.

Each channel is a lane: its messages go one at a time, in the order they came (so a thread's
replies keep theirs), `rate_per_s` apart (Slack takes one a second per channel), and a 429 holds
the whole lane for Slack's `Retry-After`. What Slack cannot take in time becomes a digest, never
a backlog: once `backlog_max` messages wait in a lane, the new ones are folded into one digest
message that takes the next place in line and grows until its turn (then the next overflow
starts another). A thread's parent shown again while an earlier showing still waits replaces it
(latest wins); shown once posted, it is updated in place (`chat.update`), an edit that waits
its turn but is never folded into a digest.

Temporary failures (5xx, timeouts, a 429) are retried with jittered backoff for up to
`give_up_after_s`; a refusal (`invalid_auth`, `channel_not_found`, blocks Slack refuses) is not.
Either way what was not told is logged and counted (`centrality_slack_messages`), and the
action's results in Kafka tell the same story. Waiting is on `clock` and `sleep`, a test's own.

An incident's parent folded into a digest lives in the digest's thread: its replies go there,
and it is not updated in place (there is no message of its own to update).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import structlog
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, wait_random_exponential

from actions.errors import TemporaryError
from actions.ledger import ThreadRef
from actions.slack.api import Api, LogApi, RateLimited, Refused, SlackApi
from actions.slack.digest import digest_message
from actions.slack.message import Message
from actions.slack.settings import SlackSettings
from actions.threads import in_thread
from schemas.runtime.metrics.catalog import SLACK_MESSAGES, SLACK_WAITING

log = structlog.get_logger("actions.slack")

How = Literal["posted", "updated", "digest", "dropped", "lost"]


@dataclass(frozen=True)
class Delivery:
    """What became of a message: `thread` is where people read it (a digest's, if digested)."""

    how: How
    thread: ThreadRef | None = None
    error: str | None = None

    @property
    def told(self) -> bool:
        return self.how in ("posted", "updated", "digest")


class Poster(Protocol):
    """What a handler may do with Slack: queue a message into an incident's thread."""

    threads: dict[str, ThreadRef]

    def post(self, incident: str, message: Message) -> dict[str, Any]: ...


@dataclass
class _Item:
    key: str  # the incident: its thread
    kind: Literal["reply", "parent", "digest"]
    message: Message
    waiters: list[asyncio.Future[Delivery]] = field(default_factory=list)
    entries: list[_Item] = field(default_factory=list)  # a digest's


@dataclass
class _Lane:
    channel: str
    queue: deque[_Item] = field(default_factory=deque)
    next_at: float = 0.0  # the notifier's clock: no call before
    task: asyncio.Task[None] | None = None
    busy: bool = False  # a message of it is being told

    def waiting(self) -> int:
        return sum(len(i.entries) if i.kind == "digest" else 1 for i in self.queue)

    def waiting_parent(self, incident: str) -> _Item | None:
        """The incident's parent still waiting, alone or in a digest."""
        for item in self.queue:
            for candidate in item.entries if item.kind == "digest" else (item,):
                if candidate.kind == "parent" and candidate.key == incident:
                    return candidate
        return None


class Notifier:
    def __init__(
        self,
        api: Api,
        settings: SlackSettings | None = None,
        threads: dict[str, ThreadRef] | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.api = api
        self.settings = settings or SlackSettings()
        self.threads: dict[str, ThreadRef] = dict(threads or {})
        self.digested: set[str] = set()  # incidents whose parent is a digest's
        self.clock, self.sleep = clock, sleep
        self._interval_s = 1.0 / self.settings.rate_per_s if api.paced else 0.0
        self._backoff = wait_random_exponential(
            multiplier=self.settings.retry_initial_s, max=self.settings.retry_max_s
        )
        self._lanes: dict[str, _Lane] = {}
        self._aliases: dict[str, str] = {}  # a channel's id: the name its lane goes by
        self._loop: asyncio.AbstractEventLoop | None = None
        self._idle = asyncio.Event()
        self._idle.set()

    def bind(self) -> None:
        """Remember the running loop, so handlers' threads can `post` into it."""
        self._loop = asyncio.get_running_loop()

    def post(self, incident: str, message: Message) -> dict[str, Any]:
        """`submit`, from the loop or from a handler's thread."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            if self._loop is None:
                raise RuntimeError("the notifier's loop is unknown: bind() it first") from None
            self._loop.call_soon_threadsafe(self.submit, incident, message)
            return {"queued": True, "incident": incident}
        return self.submit(incident, message)

    def submit(self, incident: str, message: Message) -> dict[str, Any]:
        """Queue a message into the incident's thread (opening it, if it has none, with this
        one); say whether it was queued."""
        delivery = self.reply(incident, message)
        if delivery.done() and delivery.result().how == "dropped":
            return {"queued": False, "incident": incident, "error": "notification queue full"}
        return {"queued": True, "incident": incident}

    def reply(self, incident: str, message: Message) -> asyncio.Future[Delivery]:
        return self._queue(_Item(incident, "reply", message))

    def show(self, incident: str, message: Message) -> asyncio.Future[Delivery]:
        """The incident's thread's parent: posted the first time, then updated in place."""
        waiting = self._lane(incident).waiting_parent(incident)
        if waiting is None:
            return self._queue(_Item(incident, "parent", message))
        waiting.message = message  # latest wins
        SLACK_MESSAGES.labels("coalesced").inc()
        future = self._future()
        waiting.waiters.append(future)
        return future

    async def join(self) -> None:
        """Until every message queued was told, digested or given up."""
        await self._idle.wait()

    async def close(self, timeout_s: float) -> None:
        """Tell what waits for at most `timeout_s`; what is left is logged as not sent."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.join(), timeout_s)
        left = sum(lane.waiting() for lane in self._lanes.values())
        for lane in self._lanes.values():
            if lane.task is not None:
                lane.task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await lane.task
        if left:
            log.warning("notifications_not_sent", count=left)

    def _future(self) -> asyncio.Future[Delivery]:
        self._loop = asyncio.get_running_loop()
        return self._loop.create_future()

    def _lane(self, incident: str) -> _Lane:
        thread = self.threads.get(incident)
        channel = self.settings.channel
        if thread is not None:
            channel = self._aliases.get(thread.channel, thread.channel)
        return self._lanes.setdefault(channel, _Lane(channel))

    def _queue(self, item: _Item) -> asyncio.Future[Delivery]:
        future = self._future()
        item.waiters.append(future)
        lane = self._lane(item.key)
        if lane.waiting() >= self.settings.queue_max:
            _settle(item, Delivery("dropped", error="notification queue full"))
            log.error("notification_dropped", incident=item.key, queued=lane.waiting())
            return future
        if len(lane.queue) < self.settings.backlog_max or self._updates(item):
            lane.queue.append(item)
        elif lane.queue[-1].kind == "digest":
            lane.queue[-1].entries.append(item)
        else:
            lane.queue.append(_Item(item.key, "digest", item.message, entries=[item]))
        SLACK_WAITING.inc()
        self._idle.clear()
        if lane.task is None or lane.task.done():
            lane.task = asyncio.create_task(self._run(lane), name=f"slack {lane.channel}")
        return future

    def _updates(self, item: _Item) -> bool:
        """Whether `item` edits a parent in place: never folded into a digest, and never more
        than one per incident waits (a later showing replaces it)."""
        return item.kind == "parent" and item.key in self.threads and item.key not in self.digested

    async def _run(self, lane: _Lane) -> None:
        while lane.queue:
            item = lane.queue.popleft()
            lane.busy = True
            try:
                await self._deliver(lane, item)
            finally:
                lane.busy = False
                SLACK_WAITING.dec(len(item.entries) if item.kind == "digest" else 1)
        if all(not other.queue and not other.busy for other in self._lanes.values()):
            self._idle.set()

    async def _deliver(self, lane: _Lane, item: _Item) -> None:
        if item.kind == "parent" and item.key in self.digested:  # nothing of its own to update
            _settle(item, Delivery("digest", self.threads.get(item.key)))
            return
        try:
            delivery = await self._retrying(lane, item)
        except Exception as exc:  # given up: what the actions did is in Kafka regardless
            error = f"{type(exc).__name__}: {exc}"
            log.error("notification_lost", incident=item.key, error=error)
            delivery = Delivery("lost", error=error)
        if item.kind == "digest":
            for entry in item.entries:
                if delivery.thread is not None and entry.key not in self.threads:
                    self.threads[entry.key] = delivery.thread  # its thread is the digest's
                    self.digested.add(entry.key)
                _settle(entry, delivery)
        else:
            _settle(item, delivery)

    async def _retrying(self, lane: _Lane, item: _Item) -> Delivery:
        started = self.clock()
        retrying = AsyncRetrying(
            retry=retry_if_exception_type(TemporaryError),
            wait=self._wait,
            stop=lambda _: self.clock() - started >= self.settings.give_up_after_s,
            sleep=self.sleep,
            before_sleep=_log_retry(item.key),
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                await self._turn(lane)
                try:
                    return await self._call(lane, item)
                except RateLimited as limited:  # the whole lane waits, as Slack asked
                    lane.next_at = self.clock() + limited.retry_after_s
                    raise
                finally:
                    lane.next_at = max(lane.next_at, self.clock() + self._interval_s)
        raise AssertionError("unreachable: tenacity returns or raises")

    def _wait(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        if isinstance(error, RateLimited):
            return 0.0  # the lane's next turn is Slack's Retry-After
        return float(self._backoff(state))

    async def _turn(self, lane: _Lane) -> None:
        if (wait_s := lane.next_at - self.clock()) > 0:
            await self.sleep(wait_s)

    async def _call(self, lane: _Lane, item: _Item) -> Delivery:
        thread = self.threads.get(item.key)
        if item.kind == "digest":
            message = digest_message([e.message for e in item.entries], self.settings.rate_per_s)
            ref = await in_thread(self.api.post, lane.channel, message, None)
            self._aliases.setdefault(ref.channel, lane.channel)
            return Delivery("digest", ref)
        if item.kind == "parent" and thread is not None and item.key not in self.digested:
            try:
                await in_thread(self.api.update, thread, item.message)
                return Delivery("updated", thread)
            except Refused as refused:
                if refused.error != "message_not_found":
                    raise
                log.warning("parent_gone", incident=item.key, ts=thread.ts)  # deleted: anew
                thread = None
        ts = thread.ts if thread is not None else None
        ref = await in_thread(self.api.post, lane.channel, item.message, ts)
        self._aliases.setdefault(ref.channel, lane.channel)
        if thread is None:
            self.threads[item.key] = ref
            thread = ref
        return Delivery("posted", thread)


def _settle(item: _Item, delivery: Delivery) -> None:
    SLACK_MESSAGES.labels(delivery.how).inc()
    for future in item.waiters:
        if not future.done():
            future.set_result(delivery)


def _log_retry(incident: str) -> Callable[[RetryCallState], None]:
    def before_sleep(state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        log.warning(
            "notification_retry",
            incident=incident,
            attempt=state.attempt_number,
            error=f"{type(error).__name__}: {error}"[:300],
        )

    return before_sleep


def make_notifier(settings: SlackSettings | None = None) -> Notifier:
    settings = settings or SlackSettings()
    if settings.token is None:
        return Notifier(LogApi(), settings)
    return Notifier(SlackApi(settings), settings)


def log_notifier() -> Notifier:
    """Messages into the worker's log only, as without a token."""
    return Notifier(LogApi())
