"""The installed version of Centrality, as its distribution's metadata says."""

from importlib.metadata import PackageNotFoundError, packages_distributions
from importlib.metadata import version as dist_version


def version() -> str:
    # The distribution that ships the `centrality` package, whatever it is named.
    for dist in packages_distributions().get("centrality", ["centrality"]):
        try:
            return dist_version(dist)
        except PackageNotFoundError:
            continue
    return "unknown (not installed; run `make install`)"
