import pytest

from collectors.gpu.fake import FakeGpuBackend, Fault


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_fault_spec_parses_and_rejects_nonsense() -> None:
    assert Fault.parse("xid:3:5:79:60") == Fault("xid", 3, 5.0, "79", 60.0)
    assert Fault.parse("ecc_dbe:2:0") == Fault("ecc_dbe", 2, 0.0, "", None)
    with pytest.raises(ValueError, match="kind:gpu:at_s"):
        Fault.parse("meltdown:1:2")


def test_recurring_xid_fires_once_per_period() -> None:
    clock = Clock()
    gpu = FakeGpuBackend(4, (Fault.parse("xid:1:5:79:10"),), clock=clock)
    assert gpu.open() == 4
    clock.t = 4.9
    assert gpu.pending_xids() == []
    clock.t = 5.0
    assert [(x.gpu, x.xid) for x in gpu.pending_xids()] == [(1, 79)]
    clock.t = 14.0
    assert gpu.pending_xids() == []
    clock.t = 36.0
    assert len(gpu.pending_xids()) == 3  # at 15, 25 and 35


def test_scripted_faults_show_in_samples_from_their_time() -> None:
    clock = Clock()
    faults = tuple(
        Fault.parse(s)
        for s in (
            "ecc_dbe:0:10:2",
            "throttle:1:0:HwThermalSlowdown",
            "nvlink_down:2:0:3",
            "lost:3:20",
        )
    )
    gpu = FakeGpuBackend(4, faults, clock=clock)
    gpu.open()
    assert gpu.sample(0).ecc_double_bit == 0
    assert gpu.sample(1).throttle_reasons == ("HwThermalSlowdown",)
    assert gpu.sample(2).nvlink_links_down == 3
    assert gpu.visible_gpus() == 4
    clock.t = 20.0
    assert gpu.sample(0).ecc_double_bit == 2 and gpu.sample(0).remap_pending
    assert gpu.visible_gpus() == 3
    healthy = gpu.sample(3)
    assert healthy.throttle_reasons == () and healthy.ecc_double_bit == 0
    assert 0 <= healthy.utilization_pct <= 100  # type: ignore[operator]
