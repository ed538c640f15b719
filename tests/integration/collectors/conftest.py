"""The real schedulers the watchers are tested against, from tests/support."""

import pytest

from tests.support.kube import KubeApi

# kmock answers 404 to listing a resource it holds no object of yet; a real API server lists
# the built-in kinds (and installed CRDs) empty. Declaring them makes the emulator do the same.
WATCHED_RESOURCES = ("v1/pods", "v1/nodes", "batch/v1/jobs", "kubeflow.org/v1/pytorchjobs")


@pytest.fixture
def kube_api(kube: KubeApi) -> KubeApi:
    assert kube.emulator is not None
    for resource in WATCHED_RESOURCES:
        kube.emulator.resources[resource] = {}
    return kube
