"""XIDs as the NVIDIA driver writes them to the kernel log, and GPUs that fell off the bus.

The driver prints `NVRM: Xid (PCI:0000:3b:00): 79, pid=…, GPU has fallen off the bus.` for
every XID (older drivers omit `PCI:`), whatever NVML's event API delivers, so the kernel log
is the one place every XID reaches. A GPU can also drop off the bus with no XID at all:
`NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.` or, on current drivers, over three
records: `NVRM: The NVIDIA GPU 0000:b3:00.0` / `NVRM: (PCI ID: 10de:26b5) installed in this
system has` / `NVRM: fallen off the bus and is not responding to commands.` Both are read as
NVIDIA's own code for that condition, Xid 79, marked `inferred`.

Lines may come from /dev/kmsg (`6,1234,5678,-;NVRM: …`), `dmesg` (`[ 12.3] NVRM: …`) or the
journal (`Feb 14 05:03:41 host kernel: NVRM: …`): only the text from `NVRM:` on is read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FALLEN_OFF_BUS_XID = 79

_XID = re.compile(
    r"NVRM: Xid \((?:PCI:)?([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.\d)?\):"
    r"\s*(\d+)\b,?\s*(.*)"
)
_FELL_ONE_LINE = re.compile(
    r"NVRM: GPU (?:at PCI:)?([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.\d)?:?"
    r".*fallen off the bus"
)
_THE_GPU = re.compile(r"NVRM: The NVIDIA GPU ([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})")
_FALLEN = re.compile(r"NVRM:.*fallen off the bus")
_BDF = re.compile(r"(?:PCI:)?([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})")
# A multi-record message's parts arrive together; a bus id seen this many records earlier
# belongs to another message.
_CONTINUATION_RECORDS = 3


def normalize_bus_id(text: str) -> str:
    """`PCI:0000:3B:00`, `0000:3b:00.0`, NVML's `00000000:3B:00.0` → `0000:3b:00`."""
    m = _BDF.search(text)
    if m is None:
        raise ValueError(f"not a PCI bus id: {text!r}")
    domain, bus, device = m.groups()
    return f"{int(domain, 16):04x}:{bus.lower()}:{device.lower()}"


@dataclass(frozen=True)
class KernelXid:
    bus_id: str  # normalized, see normalize_bus_id
    xid: int
    message: str  # the driver's text from `NVRM:` on
    inferred: bool = False  # fallen off the bus, no XID line: read as Xid 79


class KernelXidParser:
    """Feed kernel log lines in order; returns what each line completes, if anything."""

    def __init__(self) -> None:
        self._pending: tuple[str, str, int] | None = None  # "The NVIDIA GPU …": bus, text, at
        self._records = 0

    def feed(self, line: str) -> KernelXid | None:
        self._records += 1
        at = line.find("NVRM:")
        if at < 0:
            return None
        text = line[at:].rstrip()
        if m := _XID.search(text):
            return KernelXid(normalize_bus_id(m.group(1)), int(m.group(2)), text)
        if m := _FELL_ONE_LINE.search(text):
            return self._fell(normalize_bus_id(m.group(1)), text)
        if m := _THE_GPU.search(text):
            if _FALLEN.search(text):
                return self._fell(normalize_bus_id(m.group(1)), text)
            self._pending = (normalize_bus_id(m.group(1)), text, self._records)
            return None
        if _FALLEN.search(text) and self._pending is not None:
            bus_id, first, seen = self._pending
            if self._records - seen <= _CONTINUATION_RECORDS:
                return self._fell(bus_id, f"{first} … {text}")
        return None

    def _fell(self, bus_id: str, text: str) -> KernelXid:
        self._pending = None
        return KernelXid(bus_id, FALLEN_OFF_BUS_XID, text, inferred=True)
