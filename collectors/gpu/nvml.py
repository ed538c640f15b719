"""The real backend, through NVML (`nvidia-ml-py`, imported as `pynvml`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import pynvml

from collectors.gpu.backend import BackendUnavailable, Xid
from schemas.events.gpus import GpuSampledPayload
from schemas.events.nodes import NodeFactsObservedPayload

T = TypeVar("T")

_THROTTLE_REASONS = {
    pynvml.nvmlClocksThrottleReasonGpuIdle: "GpuIdle",
    pynvml.nvmlClocksThrottleReasonApplicationsClocksSetting: "ApplicationsClocksSetting",
    pynvml.nvmlClocksThrottleReasonSwPowerCap: "SwPowerCap",
    pynvml.nvmlClocksThrottleReasonHwSlowdown: "HwSlowdown",
    pynvml.nvmlClocksThrottleReasonSyncBoost: "SyncBoost",
    pynvml.nvmlClocksThrottleReasonSwThermalSlowdown: "SwThermalSlowdown",
    pynvml.nvmlClocksThrottleReasonHwThermalSlowdown: "HwThermalSlowdown",
    pynvml.nvmlClocksThrottleReasonHwPowerBrakeSlowdown: "HwPowerBrakeSlowdown",
    pynvml.nvmlClocksThrottleReasonDisplayClockSetting: "DisplayClockSetting",
}

_NVLINK_COUNTERS = {
    "crc": pynvml.NVML_NVLINK_ERROR_DL_CRC_FLIT,
    "replay": pynvml.NVML_NVLINK_ERROR_DL_REPLAY,
    "recovery": pynvml.NVML_NVLINK_ERROR_DL_RECOVERY,
}


def _try(fn: Callable[[], T]) -> T | None:
    """A field the GPU does not support (NotSupported, NoPermission) is None, not an error."""
    try:
        return fn()
    except pynvml.NVMLError:
        return None


def _text(value: object) -> str | None:
    """NVML strings: `str` from current bindings, `bytes` from older ones."""
    if value is None:
        return None
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def throttle_names(mask: int) -> tuple[str, ...]:
    return tuple(name for bit, name in _THROTTLE_REASONS.items() if mask & bit)


class NvmlBackend:
    name = "nvml"

    def __init__(self, init: Callable[[], None] = pynvml.nvmlInit) -> None:
        self._init = init  # loads the driver's library: where a test makes it absent
        self._handles: list[Any] = []
        self._uuids: list[str | None] = []
        self._links: list[list[int]] = []
        self._events: Any = None

    def open(self) -> int:
        try:
            self._init()
            count = pynvml.nvmlDeviceGetCount()
        except pynvml.NVMLError as exc:
            raise BackendUnavailable(f"NVML: {exc}") from exc
        self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        self._uuids = [self._uuid(h) for h in self._handles]
        self._links = [self._probe_links(h) for h in self._handles]
        self._events = self._register_xids()
        return int(count)

    def visible_gpus(self) -> int:
        return int(_try(pynvml.nvmlDeviceGetCount) or 0)

    def sample(self, gpu: int) -> GpuSampledPayload:
        h = self._handles[gpu]
        util = _try(lambda: pynvml.nvmlDeviceGetUtilizationRates(h))
        mem = _try(lambda: pynvml.nvmlDeviceGetMemoryInfo(h))
        power_mw = _try(lambda: pynvml.nvmlDeviceGetPowerUsage(h))
        throttle = _try(lambda: pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(h))
        remap = _try(lambda: pynvml.nvmlDeviceGetRemappedRows(h))
        retired = _try(
            lambda: (
                len(
                    pynvml.nvmlDeviceGetRetiredPages(
                        h, pynvml.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR
                    )
                )
                + len(
                    pynvml.nvmlDeviceGetRetiredPages(
                        h, pynvml.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS
                    )
                )
            )
        )
        links = self._links[gpu]
        return GpuSampledPayload(
            gpu=gpu,
            uuid=self._uuids[gpu],
            utilization_pct=float(util.gpu) if util is not None else None,
            memory_used_bytes=int(mem.used) if mem is not None else None,
            memory_total_bytes=int(mem.total) if mem is not None else None,
            temperature_c=_try(
                lambda: float(pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU))
            ),
            power_w=power_mw / 1000.0 if power_mw is not None else None,
            sm_clock_mhz=_try(lambda: int(pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM))),
            memory_clock_mhz=_try(
                lambda: int(pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM))
            ),
            throttle_reasons=throttle_names(int(throttle)) if throttle is not None else (),
            ecc_single_bit=self._ecc(h, pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED),
            ecc_double_bit=self._ecc(h, pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED),
            retired_pages=retired,
            remapped_rows_correctable=int(remap[0]) if remap is not None else None,
            remapped_rows_uncorrectable=int(remap[1]) if remap is not None else None,
            remap_pending=bool(remap[2]) if remap is not None else None,
            nvlink_crc_errors=self._nvlink_sum(h, links, "crc"),
            nvlink_replay_errors=self._nvlink_sum(h, links, "replay"),
            nvlink_recovery_errors=self._nvlink_sum(h, links, "recovery"),
            nvlink_links_down=(
                sum(1 for link in links if not self._link_up(h, link)) if links else None
            ),
            pcie_replay_errors=_try(lambda: int(pynvml.nvmlDeviceGetPcieReplayCounter(h))),
        )

    def facts(self) -> NodeFactsObservedPayload:
        first = self._handles[0] if self._handles else None
        memory = _try(lambda: pynvml.nvmlDeviceGetMemoryInfo(first)) if first else None
        cuda = _try(pynvml.nvmlSystemGetCudaDriverVersion_v2)  # e.g. 13000 for 13.0
        serials = [_try(partial(pynvml.nvmlDeviceGetSerial, h)) for h in self._handles]
        return NodeFactsObservedPayload(
            gpu_model=_text(_try(lambda: pynvml.nvmlDeviceGetName(first))) if first else None,
            gpu_count=len(self._handles),
            gpu_memory_bytes=int(memory.total) if memory is not None else None,
            driver_version=_text(_try(pynvml.nvmlSystemGetDriverVersion)),
            cuda_version=f"{cuda // 1000}.{cuda % 1000 // 10}" if cuda else None,
            gpu_serials=tuple(_text(s) or "" for s in serials) if any(serials) else None,
        )

    def pci_bus_ids(self) -> dict[int, str]:
        found: dict[int, str] = {}
        for gpu, h in enumerate(self._handles):
            info: Any = _try(partial(pynvml.nvmlDeviceGetPciInfo, h))
            bus = getattr(info, "busId", None)
            if bus is not None:
                found[gpu] = bus.decode() if isinstance(bus, bytes) else str(bus)
        return found

    def wait_xids(self, timeout_s: float) -> list[Xid]:
        if self._events is None:
            time.sleep(timeout_s)
            return []
        try:
            data = pynvml.nvmlEventSetWait_v2(self._events, int(timeout_s * 1000))
        except pynvml.NVMLError_Timeout:
            return []
        except pynvml.NVMLError:
            time.sleep(timeout_s)
            return []
        gpu = _try(lambda: int(pynvml.nvmlDeviceGetIndex(data.device)))
        if gpu is None:
            return []
        return [Xid(gpu=gpu, xid=int(data.eventData), uuid=self._uuids[gpu])]

    def close(self) -> None:
        if self._events is not None:
            _try(lambda: pynvml.nvmlEventSetFree(self._events))
        _try(pynvml.nvmlShutdown)

    @staticmethod
    def _ecc(handle: Any, kind: int) -> int | None:
        return _try(
            lambda: int(pynvml.nvmlDeviceGetTotalEccErrors(handle, kind, pynvml.NVML_VOLATILE_ECC))
        )

    @staticmethod
    def _uuid(handle: Any) -> str | None:
        try:
            return str(pynvml.nvmlDeviceGetUUID(handle))
        except pynvml.NVMLError:
            return None

    @staticmethod
    def _link_up(handle: Any, link: int) -> bool:
        try:
            return bool(pynvml.nvmlDeviceGetNvLinkState(handle, link))
        except pynvml.NVMLError:
            return False

    @staticmethod
    def _probe_links(handle: Any) -> list[int]:
        """Links that exist on this GPU; probing once keeps each sample to supported calls."""
        links = []
        for link in range(pynvml.NVML_NVLINK_MAX_LINKS):
            try:
                pynvml.nvmlDeviceGetNvLinkState(handle, link)
            except pynvml.NVMLError:
                continue
            links.append(link)
        return links

    @staticmethod
    def _nvlink_sum(handle: Any, links: list[int], counter: str) -> int | None:
        if not links:
            return None
        kind = _NVLINK_COUNTERS[counter]
        known = []
        for link in links:
            try:
                known.append(int(pynvml.nvmlDeviceGetNvLinkErrorCounter(handle, link, kind)))
            except pynvml.NVMLError:
                continue
        return sum(known) if known else None

    def _register_xids(self) -> Any:
        event_set = _try(pynvml.nvmlEventSetCreate)
        if event_set is None:
            return None
        registered = 0
        for h in self._handles:
            try:
                pynvml.nvmlDeviceRegisterEvents(h, pynvml.nvmlEventTypeXidCriticalError, event_set)
                registered += 1
            except pynvml.NVMLError:
                continue
        return event_set if registered else None
