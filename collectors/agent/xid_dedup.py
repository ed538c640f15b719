"""One XID seen two ways counts once.

NVML's event API and the kernel log report the same XID; a GPU falling off the bus can show
as an `Xid … 79` line, a "fallen off the bus" line, and NVML's event. Each observation names
its channel (`nvml`, `kernel`, `kernel-inferred`). An observation of (GPU, XID) is dropped when
another channel reported the same (GPU, XID) within `window_s` and that report has not already
absorbed an observation from this channel. Repeats on one channel are always kept: a GPU that
logs Xid 13 five times had five faults.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


@dataclass
class _Seen:
    at: float
    gpu: int
    xid: int
    channels: set[str] = field(default_factory=set)


class XidDeduper:
    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        self._recent: deque[_Seen] = deque(maxlen=256)

    def first_sighting(self, gpu: int, xid: int, channel: str, now: float) -> bool:
        """True when this observation is news; False when another channel already said it."""
        while self._recent and now - self._recent[0].at > self.window_s:
            self._recent.popleft()
        for seen in self._recent:
            if seen.gpu == gpu and seen.xid == xid and channel not in seen.channels:
                seen.channels.add(channel)
                return False
        self._recent.append(_Seen(now, gpu, xid, {channel}))
        return True
