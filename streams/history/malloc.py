"""glibc's malloc, told to give the sink's large buffers back to the system once freed."""

from __future__ import annotations

import ctypes

_M_MMAP_THRESHOLD = -3  # mallopt's parameter number, from glibc's malloc.h


def map_large_blocks(threshold_bytes: int) -> bool:
    """Blocks of `threshold_bytes` or more get a mapping of their own, unmapped when freed.

    glibc's threshold starts at 128 KiB but rises to the size of every large block freed (up to
    32 MiB). After the first batches, a batch's buffers (the pickled batch an insert process
    receives, the fetches behind it) came from the heap and stayed resident between batches in
    holes the next ones did not always fit: the sink's processes grew batch after batch (an insert
    process 146 MB at the end of a 10,000-node burst, 127 MB with 1 MiB fixed). Fixing it also
    ends that adjustment. False where it is not set (not glibc, or `threshold_bytes` 0)."""
    if threshold_bytes <= 0:
        return False
    try:  # the symbols already loaded: no search for the library (find_library runs ldconfig)
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, threshold_bytes))
