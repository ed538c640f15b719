"""The Slack fake and a notifier that talks to it, on one test clock where a test wants one."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import SecretStr

from actions.slack.api import SlackApi
from actions.slack.notifier import Notifier
from actions.slack.settings import SlackSettings
from centrality.slack_fake import SlackFake

TOKEN = "xoxb-test-token"


class FastClock:
    """Time that leaps to the end of every sleep on it: the notifier's waits cost no real time,
    and the Slack fake sees them pass."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

    async def sleep(self, seconds: float) -> None:
        self.now += max(0.0, seconds)
        await asyncio.sleep(0)


def slack_settings(fake: SlackFake, **settings: Any) -> SlackSettings:
    return SlackSettings(token=SecretStr(TOKEN), base_url=fake.base_url, **settings)


def notifier_for(fake: SlackFake, **settings: Any) -> Notifier:
    """A notifier posting to `fake`, on the fake's clock when that is a `FastClock`."""
    s = slack_settings(fake, **settings)
    clock = fake.clock
    if isinstance(clock, FastClock):
        return Notifier(SlackApi(s), s, clock=clock, sleep=clock.sleep)
    return Notifier(SlackApi(s), s)
