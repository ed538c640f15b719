"""The sink's insert processes and the sink itself give large blocks back once freed."""

import platform

import pytest

from streams.history.malloc import map_large_blocks


def test_zero_keeps_glibc_as_it_is() -> None:
    assert map_large_blocks(0) is False


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_the_threshold_is_set_on_glibc() -> None:
    assert map_large_blocks(1 << 20) is True
