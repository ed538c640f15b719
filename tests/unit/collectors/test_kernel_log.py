import asyncio
import os
import shutil
from pathlib import Path

from collectors.agent.agent import NodeAgent
from collectors.agent.kernel_log import FollowedFile, Kmsg, _drain
from collectors.agent.settings import AgentSettings
from collectors.agent.xid_dedup import XidDeduper
from collectors.gpu.fake import FakeGpuBackend, Fault
from collectors.gpu.pci import GpuIndex
from collectors.health.builtin.fatal_xids import fatal_xids
from collectors.health.builtin.kernel_gpu_faults import kernel_gpu_faults
from collectors.sink import RecordingSink
from schemas.events import GpuXidObserved
from schemas.events.nodes import HealthStatus
from tests.support.clock import ManualClock

XIDS = Path(__file__).parents[2] / "fixtures" / "realworld" / "xid"


def settings(tmp_path: Path, **kw: object) -> AgentSettings:
    base: dict[str, object] = {
        "node": "n1",
        "cluster": "c1",
        "backend": "fake",
        "kernel_log": "none",
        "pci_driver_dir": tmp_path / "no-sysfs",
    }
    return AgentSettings.model_validate({**base, **kw})


async def read_all(agent: NodeAgent, path: Path) -> None:
    """Read a kernel log file from its start until the reader waits for more, then stop."""
    source = FollowedFile(path, 0.02, from_start=True, clock=agent.clock)
    assert isinstance(agent.clock, ManualClock)
    stop = asyncio.Event()
    task = asyncio.create_task(agent.read_kernel_log(source, stop))
    try:
        await agent.clock.settle(1)
    finally:
        stop.set()
        await agent.clock.finish(task)


def agent_on(
    tmp_path: Path, backend: FakeGpuBackend, sink: RecordingSink, **kw: object
) -> NodeAgent:
    return NodeAgent(settings(tmp_path, **kw), backend, sink, clock=ManualClock())


async def test_xid_seen_by_nvml_an_xid_line_and_a_fallen_off_line_is_sent_once(
    tmp_path: Path,
) -> None:
    # The fake backend numbers bus 0x10 + i as GPU i, so 0000:15:00 is GPU 5.
    clock = ManualClock()
    backend = FakeGpuBackend(8, (Fault.parse("xid:5:0:79"),), clock=clock.now, sleep=clock.block)
    sink = RecordingSink()
    agent = NodeAgent(settings(tmp_path), backend, sink, clock=clock)
    agent.open_backend()
    assert await agent.poll_xids(0.5) == 1
    log = tmp_path / "kern.log"
    log.write_text(
        "Jun 11 09:44:44 h kernel: NVRM: Xid (PCI:0000:15:00): 79, GPU has fallen off the bus.\n"
        "Jun 11 09:44:44 h kernel: NVRM: GPU 0000:15:00.0: GPU has fallen off the bus.\n"
        "Jun 11 09:44:45 h kernel: NVRM: Xid (PCI:0000:16:00): 79, GPU has fallen off the bus.\n"
    )
    await read_all(agent, log)
    sent = [(e.payload.gpu, e.payload.xid, e.payload.channel) for e in sink.of_type(GpuXidObserved)]
    assert sent == [(5, 79, "nvml"), (6, 79, "kernel")]
    assert sink.of_type(GpuXidObserved)[1].payload.pci_bus_id == "0000:16:00"


async def test_kernel_only_xids_map_through_sysfs_and_repeats_are_kept(tmp_path: Path) -> None:
    sysfs = tmp_path / "nvidia"
    for entry in ("0000:3b:00.0", "0000:cb:00.0", "bind", "module", "new_id"):
        (sysfs / entry).mkdir(parents=True)
    sink = RecordingSink()
    agent = agent_on(tmp_path, FakeGpuBackend(0), sink, pci_driver_dir=sysfs)
    agent.open_backend()  # no GPUs through the backend: NVML failed, say
    await read_all(agent, XIDS / "gpud_pr46_dmesg_ctime.log")
    events = sink.of_type(GpuXidObserved)
    assert [(e.payload.gpu, e.payload.xid) for e in events] == [(1, 13), (1, 13), (1, 13), (1, 109)]
    assert {e.payload.pci_bus_id for e in events} == {"0000:cb:00"}
    assert {e.subject for e in events} == {"n1"}


async def test_a_gpu_fallen_off_without_an_xid_turns_the_fatal_check_critical(
    tmp_path: Path,
) -> None:
    sink = RecordingSink()
    agent = agent_on(tmp_path, FakeGpuBackend(0), sink)
    agent.open_backend()
    await read_all(agent, XIDS / "nvsentinel_issue155_fallen_off_no_xid.log")
    [event] = sink.of_type(GpuXidObserved)
    assert (event.payload.xid, event.payload.channel, event.payload.pci_bus_id) == (
        79,
        "kernel-inferred",
        "0000:b3:00",
    )
    assert fatal_xids(agent.ctx).status == HealthStatus.CRITICAL


async def test_a_gpu_the_driver_cannot_bring_up_is_xid_143_on_that_gpu(tmp_path: Path) -> None:
    sysfs = tmp_path / "nvidia"
    for entry in ("0000:01:00.0", "0000:a1:00.0"):
        (sysfs / entry).mkdir(parents=True)
    sink = RecordingSink()
    agent = agent_on(tmp_path, FakeGpuBackend(0), sink, pci_driver_dir=sysfs)
    agent.open_backend()
    await read_all(agent, XIDS / "ogkm1230_gsp_boot_bad_state.log")
    sent = [(e.payload.gpu, e.payload.xid, e.payload.channel) for e in sink.of_type(GpuXidObserved)]
    assert sent == [(1, 143, "kernel-inferred")] * 2
    assert fatal_xids(agent.ctx).status == HealthStatus.CRITICAL


async def test_a_reset_asked_for_no_named_gpu_is_a_critical_check_not_an_xid(
    tmp_path: Path,
) -> None:
    sink = RecordingSink()
    agent = agent_on(tmp_path, FakeGpuBackend(0), sink)
    agent.open_backend()
    assert kernel_gpu_faults(agent.ctx).status == HealthStatus.OK
    await read_all(agent, XIDS / "sichek51_reset_required_no_gpu.log")
    assert sink.of_type(GpuXidObserved) == []
    result = kernel_gpu_faults(agent.ctx)
    assert result.status == HealthStatus.CRITICAL
    assert result.message.startswith("kernel: 1 record(s) naming no GPU; needs a GPU reset: NVRM:")
    assert result.details == {"asks": ["RESET_GPU"], "records": 1}
    assert isinstance(agent.clock, ManualClock)
    await agent.clock.advance(agent.settings.xid_window_s + 1)
    assert kernel_gpu_faults(agent.ctx).status == HealthStatus.OK  # the window has passed


async def test_followed_file_reads_new_lines_only_and_survives_rotation(tmp_path: Path) -> None:
    log = tmp_path / "kern.log"
    log.write_text("NVRM: Xid (PCI:0000:01:00): 13, old, before the agent\n")
    clock = ManualClock()
    stop = asyncio.Event()
    got: list[str] = []

    async def collect() -> None:
        async for line in FollowedFile(log, 0.02, clock=clock).lines(stop):
            got.append(line)

    task = asyncio.create_task(collect())
    try:
        await clock.settle(1)  # opened at the end of what was there
        assert got == []
        with log.open("a") as f:
            f.write("new one\npartial")
        await clock.advance(0.02)
        assert got == ["new one"]  # the partial line waits for its end
        with log.open("a") as f:
            f.write(" line\n")
        await clock.advance(0.02)
        shutil.move(log, tmp_path / "kern.log.1")
        log.write_text("after rotation\n")
        await clock.advance(0.02)
    finally:
        stop.set()
        await clock.finish(task)
    assert got == ["new one", "partial line", "after rotation"]


def test_kmsg_records_are_read_one_per_read_without_their_header() -> None:
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    try:
        os.write(write_fd, b"4,9921,937012345,-;NVRM: Xid (PCI:0000:3b:00): 79, GPU\n")
        assert _drain(read_fd) == ["NVRM: Xid (PCI:0000:3b:00): 79, GPU"]
        assert _drain(read_fd) == []
    finally:
        os.close(read_fd)
        os.close(write_fd)
    assert Kmsg(Path("/dev/kmsg"), 0.5).name == "/dev/kmsg"


def test_dedup_is_across_channels_only_and_within_the_window() -> None:
    d = XidDeduper(window_s=10)
    assert d.first_sighting(0, 79, "nvml", 0.0)
    assert not d.first_sighting(0, 79, "kernel", 1.0)
    assert not d.first_sighting(0, 79, "kernel-inferred", 1.5)
    assert d.first_sighting(0, 79, "nvml", 2.0)  # NVML again: a second fault
    assert not d.first_sighting(0, 79, "kernel", 2.5)  # its kernel line
    assert d.first_sighting(1, 79, "kernel", 3.0)  # another GPU
    assert d.first_sighting(0, 79, "kernel", 20.0)  # too late to be the same one


def test_gpu_index_exact_then_sysfs_order_then_sorted_place() -> None:
    index = GpuIndex({0: "00000000:3B:00.0", 1: "00000000:86:00.0"}, ["0000:3b:00", "0000:af:00"])
    assert index.of("PCI:0000:86:00") == 1
    assert index.of("0000:af:00") == 1  # sysfs order
    assert index.of("0000:99:00") == 2  # known to neither: its place among all known


async def test_a_log_file_that_appears_later_is_read_from_its_start(tmp_path: Path) -> None:
    log = tmp_path / "kern.log"
    clock = ManualClock()
    stop = asyncio.Event()
    got: list[str] = []

    async def collect() -> None:
        async for line in FollowedFile(log, 0.02, clock=clock).lines(stop):
            got.append(line)

    task = asyncio.create_task(collect())
    try:
        await clock.settle(1)  # looked, found no file
        log.write_text("first\nsecond\n")
        await clock.advance(0.02)
    finally:
        stop.set()
        await clock.finish(task)
    assert got == ["first", "second"]
