"""XIDs as the NVIDIA driver writes them to the kernel log, and GPUs that fell off the bus.

The driver prints `NVRM: Xid (PCI:0000:3b:00): 79, pid=…, GPU has fallen off the bus.` for
every XID (older drivers omit `PCI:`), whatever NVML's event API delivers, so the kernel log
is the one place every XID reaches. A GPU can also drop off the bus with no XID at all:
`NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.` or, on current drivers, over three
records: `NVRM: The NVIDIA GPU 0000:b3:00.0` / `NVRM: (PCI ID: 10de:26b5) installed in this
system has` / `NVRM: fallen off the bus and is not responding to commands.` Both are read as
NVIDIA's own code for that condition, Xid 79, marked `inferred`. So are two more records that
name a GPU and say what an XID would: `NVRM: GPU 0000:98:00.0: RmInitAdapter failed! (0x62:…)`
(the driver could not bring the GPU up: Xid 143, GPU Initialization Error) and `NVRM: Rate
limiting GSP RPC error prints for GPU at PCI:0000:03:00 (…). The GPU likely needs to be reset.`
(GSP stopped answering: Xid 119, GSP RPC Timeout). `rm_init_adapter failed, device minor number`
follows every `RmInitAdapter failed!` and is not read again.

Some records say a GPU is lost or needs a reset and name no GPU at all: the assertions
`… Reset required [NV_ERR_RESET_REQUIRED] …`, `… GPU lost from the bus [NV_ERR_GPU_IS_LOST] …`,
`… Back to back GSP RPC timeout detected! GPU marked for reset …`, and GSP's boot giving up with
`(the GPU is likely in a bad state and may need to be reset)` (it may say `GPU6`, the driver's
own instance number, which is no NVML index). They are `KernelGpuFault`s: a fact about the node,
with what it asks for, never pinned on a GPU by guessing.

Lines may come from /dev/kmsg (`6,1234,5678,-;NVRM: …`), `dmesg` (`[ 12.3] NVRM: …`) or the
journal (`Feb 14 05:03:41 host kernel: NVRM: …`): only the text from `NVRM:` on is read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from schemas.xids import XidResolution

FALLEN_OFF_BUS_XID = 79
GSP_RPC_TIMEOUT_XID = 119
GPU_INIT_ERROR_XID = 143

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
# Records naming a GPU that say what an XID would, and the XID they say it of.
_SAID_AS_XID: tuple[tuple[re.Pattern[str], int], ...] = (
    (
        re.compile(
            r"NVRM: GPU ([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.\d)?: "
            r"RmInitAdapter failed!"
        ),
        GPU_INIT_ERROR_XID,
    ),
    (
        re.compile(
            r"NVRM: Rate limiting GSP RPC error prints for GPU at (?:PCI:)?"
            r"([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}).*needs to be reset"
        ),
        GSP_RPC_TIMEOUT_XID,
    ),
)
# Records naming no GPU that say one is lost or needs a reset, and what that asks for.
_UNNAMED: tuple[tuple[re.Pattern[str], XidResolution], ...] = (
    (re.compile(r"\[NV_ERR_GPU_IS_LOST\]"), XidResolution.REBOOT_NODE),
    (re.compile(r"\[NV_ERR_RESET_REQUIRED\]"), XidResolution.RESET_GPU),
    (re.compile(r"GSP RPC timeout detected! GPU marked for reset"), XidResolution.RESET_GPU),
    (
        re.compile(r"the GPU is likely in a bad state and may need to be reset"),
        XidResolution.RESET_GPU,
    ),
)
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
    inferred: bool = False  # no XID line: a record saying what an XID would, read as that XID


@dataclass(frozen=True)
class KernelGpuFault:
    """A record saying a GPU is lost or needs a reset that names no GPU."""

    message: str  # the driver's text from `NVRM:` on
    resolution: XidResolution  # what it asks for


class KernelXidParser:
    """Feed kernel log lines in order; returns what each line completes, if anything."""

    def __init__(self) -> None:
        self._pending: tuple[str, str, int] | None = None  # "The NVIDIA GPU …": bus, text, at
        self._records = 0

    def feed(self, line: str) -> KernelXid | KernelGpuFault | None:
        self._records += 1
        at = line.find("NVRM:")
        if at < 0:
            return None
        text = line[at:].rstrip()
        if m := _XID.search(text):
            return KernelXid(normalize_bus_id(m.group(1)), int(m.group(2)), text)
        if m := _FELL_ONE_LINE.search(text):
            return self._fell(normalize_bus_id(m.group(1)), text)
        for regex, xid in _SAID_AS_XID:
            if m := regex.search(text):
                return KernelXid(normalize_bus_id(m.group(1)), xid, text, inferred=True)
        for regex, resolution in _UNNAMED:
            if regex.search(text):
                return KernelGpuFault(text, resolution)
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
