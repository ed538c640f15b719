"""Fixtures the action tests share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from centrality.slack_stub import SlackStub


@pytest.fixture
def slack() -> Iterator[SlackStub]:
    with SlackStub() as stub:
        yield stub
