"""Fixtures the action tests share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from centrality.slack_fake import SlackFake
from tests.support.slack import FastClock


@pytest.fixture
def slack() -> Iterator[SlackFake]:
    """The Slack fake, on a clock that leaps over the notifier's waits (Slack's pace costs no
    real time)."""
    with SlackFake(clock=FastClock()) as fake:
        yield fake
