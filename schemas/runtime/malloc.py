"""glibc's malloc, told to give memory back to the system: the large buffers of the history sink
and the streams worker once freed (`map_large_blocks`), and what a long-running worker freed in
between (`trim`).

Both are no-ops where the C library is not glibc."""

from __future__ import annotations

import ctypes
from typing import Any

from pydantic import Field

_M_MMAP_THRESHOLD = -3  # mallopt's parameter number, from glibc's malloc.h
_MMAP_THRESHOLD_MAX_BYTES = 32 << 20  # glibc's ceiling for it on 64-bit


def threshold_setting(what: str) -> Any:
    """The setting of a process's `map_large_blocks` threshold: 1 MiB by default; `what` names
    the blocks it is for."""
    return Field(
        default=1 << 20,
        ge=0,
        le=_MMAP_THRESHOLD_MAX_BYTES,
        description=f"glibc only: memory blocks this large or larger ({what}) get a mapping of "
        "their own, given back to the system when freed. glibc's own threshold rises with every "
        "large block freed, and such blocks then stay resident in the holes they leave; 0 keeps "
        "glibc's behaviour.",
    )


def _glibc(name: str) -> Any | None:
    try:  # the symbols already loaded: no search for the library (find_library runs ldconfig)
        return getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None


def trim() -> bool:
    """Hand back every whole free page of the heap (glibc's `malloc_trim(0)`): whether any was.

    glibc gives back only the top of its heap by itself; memory freed below it stays resident
    for the process's reuse. In the streams worker that is RocksDB's flushed write buffers and
    the batches freed in between, and its RSS crept up to their high-water mark: 13 MB of 165
    came back from one call, 68 minutes into a soak at 2,000 nodes."""
    malloc_trim = _glibc("malloc_trim")
    if malloc_trim is None:
        return False
    malloc_trim.argtypes = (ctypes.c_size_t,)
    malloc_trim.restype = ctypes.c_int
    return bool(malloc_trim(0))


def map_large_blocks(threshold_bytes: int) -> bool:
    """Blocks of `threshold_bytes` or more get a mapping of their own, unmapped when freed.

    glibc's threshold starts at 128 KiB but rises to the size of every large block freed (up to
    32 MiB). After the first batches, a batch's buffers (the pickled batch an insert process
    receives, the fetches behind it) came from the heap and stayed resident between batches in
    holes the next ones did not always fit: the sink's processes grew batch after batch (an insert
    process 146 MB at the end of a 10,000-node burst, 127 MB with 1 MiB fixed). Fixing it also
    ends that adjustment. False where it is not set (not glibc, or `threshold_bytes` 0)."""
    mallopt = _glibc("mallopt") if threshold_bytes > 0 else None
    if mallopt is None:
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, threshold_bytes))
