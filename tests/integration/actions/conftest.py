from collections.abc import Iterator

import pytest

from actions.adapters.base import make_adapter
from actions.adapters.slurm import SlurmAdapter
from centrality.slack_fake import SlackFake
from tests.support.slurm import SlurmCluster


@pytest.fixture
def slack() -> Iterator[SlackFake]:
    """A local Slack Web API that records what was posted."""
    with SlackFake() as stub:
        yield stub


@pytest.fixture
def slurm(slurm_cluster: SlurmCluster, monkeypatch: pytest.MonkeyPatch) -> Iterator[SlurmAdapter]:
    """The Slurm adapter on the session's local cluster; nodes resumed after (it is shared)."""
    for key, value in slurm_cluster.adapter_env().items():
        monkeypatch.setenv(key, value)
    adapter = make_adapter("slurm")
    assert isinstance(adapter, SlurmAdapter)
    yield adapter
    adapter.resume(slurm_cluster.node_names)
