"""What this host runs: Kafka codecs the clients can use, and the versions of what we depend on."""

from __future__ import annotations

import platform
from collections.abc import Callable, Iterator
from importlib import metadata

from aiokafka import codec

from centrality.doctor import Finding, check
from centrality.version import version
from streams.faust import canary as faust_canary

SAMPLE = b'{"type":"GpuSampled","payload":{"util":0.97}}' * 64

# Producers in other languages may use any of them; a consumer that lacks one dead-letters a batch.
CODECS: dict[str, tuple[Callable[[], bool], Callable[[bytes], bytes], Callable[[bytes], bytes]]] = {
    "gzip": (codec.has_gzip, codec.gzip_encode, codec.gzip_decode),
    "snappy": (codec.has_snappy, codec.snappy_encode, codec.snappy_decode),
    "lz4": (codec.has_lz4, codec.lz4_encode, codec.lz4_decode),
    "zstd": (codec.has_zstd, codec.zstd_encode, codec.zstd_decode),
}


@check("codecs")
def codecs() -> Iterator[Finding]:
    broken = []
    for name, (available, encode, decode) in CODECS.items():
        if not available() or decode(encode(SAMPLE)) != SAMPLE:
            broken.append(name)
    if broken:
        yield Finding(
            "codecs",
            "fail",
            f"Kafka codecs unusable here: {', '.join(broken)}",
            "reinstall the package's dependencies (`make install`; cramjam provides them)",
        )
    else:
        yield Finding("codecs", "ok", f"{', '.join(CODECS)} round-trip")


@check("versions")
def versions() -> Iterator[Finding]:
    installed = {name: _installed(name) for name in faust_canary.PINNED}
    detail = f"centrality {version()}, Python {platform.python_version()}, " + ", ".join(
        f"{name} {v}" for name, v in installed.items()
    )
    problems = [
        f"{name} {installed[name]} is not the pinned {want}"
        for name, want in faust_canary.PINNED.items()
        if installed[name] != want
    ] + faust_canary.check()
    if problems:
        yield Finding(
            "versions",
            "fail",
            f"{detail}; the streams worker's Faust fixes no longer fit: {'; '.join(problems)}",
            f"install the pinned versions {faust_canary.PINNED} (`make install`)",
        )
    else:
        yield Finding("versions", "ok", detail)


def _installed(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
