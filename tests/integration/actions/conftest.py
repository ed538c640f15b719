from collections.abc import Iterator

import pytest

from centrality.slack_stub import SlackStub


@pytest.fixture
def slack() -> Iterator[SlackStub]:
    """A local Slack Web API that records what was posted."""
    with SlackStub() as stub:
        yield stub
