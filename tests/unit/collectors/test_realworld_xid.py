"""Kernel-log XID lines captured from public sources (tests/fixtures/realworld/xid/PROVENANCE.md).

Expected values were read off each line by hand.
"""

from pathlib import Path

import pytest

from collectors.gpu.kernel_xids import KernelGpuFault, KernelXid, KernelXidParser
from schemas.xids import XidResolution, is_fatal, resolution_of

R = XidResolution

CORPUS = Path(__file__).parents[2] / "fixtures" / "realworld" / "xid"

# file → [(bus id, xid, inferred, start of the message)]
CASES: dict[str, list[tuple[str, int, bool, str]]] = {
    "nvidia_xid_doc_example.log": [
        ("0000:03:00", 14, False, "NVRM: Xid (0000:03:00): 14, Channel 00000001"),
    ],
    "gpud_pr46_dmesg_ctime.log": [
        ("0000:cb:00", 13, False, "NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>'"),
        ("0000:cb:00", 13, False, "NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>'"),
        ("0000:cb:00", 13, False, "NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>'"),
        ("0000:cb:00", 109, False, "NVRM: Xid (PCI:0000:cb:00): 109, pid=1797828"),
    ],
    "gpud_pr1174_kmsg.log": [
        ("0019:01:00", 149, False, "NVRM: Xid (PCI:0019:01:00): 149, NETIR Fatal"),
        ("0000:00:00", 149, False, "NVRM: Xid (PCI:0000:00:00): 149, NETIR_LINK_EVT Fatal"),
        ("0018:01:00", 145, False, "NVRM: Xid (PCI:0018:01:00): 145, RLW_RXPIPE Nonfatal"),
        ("0000:9b:00", 94, False, "NVRM: Xid (PCI:0000:9b:00): 94, pid=1234, name=python3"),
    ],
    "nvsentinel_issue155_fallen_off_no_xid.log": [
        ("0000:b3:00", 79, True, "NVRM: The NVIDIA GPU 0000:b3:00.0 … NVRM: fallen off the bus"),
    ],
    "nvsentinel_issue155_xid79.log": [
        ("0000:44:00", 79, False, "NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus"),
    ],
    "ml_engineering_debug_xid63.log": [
        ("0000:10:1c", 63, False, "NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper"),
    ],
    "gpud_pr1160_nvlink5_severity.log": [
        ("0000:01:00", 144, False, "NVRM: Xid (PCI:0000:01:00): 144, SAW_MVB Nonfatal"),
        ("0000:00:00", 149, False, "NVRM: Xid (PCI:0000:00:00): 149, NETIR_LINK_EVT Fatal"),
        ("0000:00:00", 149, False, "NVRM: Xid (PCI:0000:00:00): 149, NETIR_LINK_EVT Fatal"),
    ],
    "ogkm1150_xid45_after_nvlink5.log": [
        ("0000:dc:00", 45, False, "NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990"),
        ("0000:ed:00", 45, False, "NVRM: Xid (PCI:0000:ed:00): 45, pid=1818992"),
        ("0000:ba:00", 45, False, "NVRM: Xid (PCI:0000:ba:00): 45, pid=1818989"),
        ("0000:97:00", 45, False, "NVRM: Xid (PCI:0000:97:00): 45, pid=1818987"),
    ],
    # A lost GPU that the driver cannot name by bus: nothing to pin on a GPU (see FAULTS).
    "ogkm688_gpu_lost_no_bus_id.log": [],
    "nvforum371272_xid62_xid154.log": [
        ("0000:01:00", 62, False, "NVRM: Xid (PCI:0000:01:00): 62, 323f0f30"),
        ("0000:01:00", 154, False, "NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action"),
    ],
    "xid154_os_reboot_driver610.log": [
        ("0000:01:00", 79, False, "NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off"),
        ("0000:01:00", 79, True, "NVRM: GPU 0000:01:00.0: GPU has fallen off the bus."),
        ("0000:01:00", 154, False, "NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action"),
    ],
    "xid154_pf_flr.log": [
        ("0000:0d:00", 51, False, "NVRM: Xid (PCI:0000:0d:00): 51, BAD_TSG"),
        ("0000:0d:00", 154, False, "NVRM: Xid (PCI:0000:0d:00): 154, GPU recovery action"),
    ],
    "xid154_node_reboot_required.log": [
        ("0000:02:00", 154, False, "NVRM: Xid (PCI:0000:02:00): 154, GPU recovery action"),
        ("0008:01:00", 154, False, "NVRM: Xid (PCI:0008:01:00): 154, GPU recovery action"),
    ],
    # Records that say what an XID would, with no XID line (issue 43): the driver failing to
    # bring a GPU up is Xid 143, GSP's errors rate-limited with "needs to be reset" Xid 119.
    "ogkm789_rminitadapter_gsp.log": [
        ("0000:98:00", 143, True, "NVRM: GPU 0000:98:00.0: RmInitAdapter failed! (0x62:0x65"),
    ],
    "cuda_samples104_rminitadapter_journal.log": [
        ("0000:13:00", 143, True, "NVRM: GPU 0000:13:00.0: RmInitAdapter failed! (0x26:0x56"),
    ],
    # Every retry is one more record (`rm_init_adapter failed, …` repeats each, and is skipped).
    "gpu_operator649_rminitadapter_two_gpus.log": [
        (bus, 143, True, f"NVRM: GPU {bus}.0: RmInitAdapter failed!")
        for bus in ("0000:04:01", "0000:04:02", "0000:04:02", "0000:04:01", "0000:04:01")
    ]
    + [("0000:04:02", 143, True, "NVRM: GPU 0000:04:02.0: RmInitAdapter failed!")],
    "gpu_operator1146_rminitadapter_syslog_dmesg.log": [
        ("0000:0a:00", 143, True, "NVRM: GPU 0000:0a:00.0: RmInitAdapter failed! (0x24:0x72")
    ]
    * 6,
    "ogkm1230_gsp_boot_bad_state.log": [
        ("0000:a1:00", 143, True, "NVRM: GPU 0000:a1:00.0: RmInitAdapter failed! (0x62:0x40")
    ]
    * 2,
    "ogkm876_gsp_boot_then_xid120.log": [
        ("0000:01:00", 143, True, "NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x62:0x40"),
        ("0000:01:00", 120, False, "NVRM: Xid (PCI:0000:01:00): 120, GSP task exception"),
    ],
    "gsp_rpc_rate_limited_needs_reset_535.log": [
        ("0000:03:00", 119, False, "NVRM: Xid (PCI:0000:03:00): 119, pid=32273, name=nvitop"),
        ("0000:03:00", 119, False, "NVRM: Xid (PCI:0000:03:00): 119, pid=32273, name=nvitop"),
        ("0000:03:00", 119, False, "NVRM: Xid (PCI:0000:03:00): 119, pid=32273, name=nvitop"),
        ("0000:03:00", 119, True, "NVRM: Rate limiting GSP RPC error prints for GPU at PCI:"),
        ("0000:03:00", 119, False, "NVRM: Xid (PCI:0000:03:00): 119, pid=32273, name=nvitop"),
    ]
    + [("0000:03:00", 143, True, "NVRM: GPU 0000:03:00.0: RmInitAdapter failed! (0x")] * 9,
    "ogkm446_back_to_back_gsp_timeout_talos.log": [
        ("0000:0b:00", 154, False, "NVRM: Xid (PCI:0000:0b:00): 154, GPU recovery action"),
    ],
    "sichek51_reset_required_no_gpu.log": [],
    "dra982_reset_required_gb200.log": [],
}

RESET, REBOOT = XidResolution.RESET_GPU, XidResolution.REBOOT_NODE
# file → [(what it asks for, start of the message)]: records saying a GPU is lost or needs a
# reset that name no GPU (issue 43). A generic assertion (`Assertion failed: 0 @ …`) is none.
FAULTS: dict[str, list[tuple[XidResolution, str]]] = {
    "ogkm688_gpu_lost_no_bus_id.log": [
        (REBOOT, "NVRM: nvAssertOkFailedNoLog: Assertion failed: GPU lost from the bus"),
    ],
    "ogkm1230_gsp_boot_bad_state.log": [
        (RESET, "NVRM: GPU6 _kgspBootGspRm: (the GPU is likely in a bad state"),
    ]
    * 2,
    "ogkm876_gsp_boot_then_xid120.log": [
        (RESET, "NVRM: _kgspBootGspRm: (the GPU is likely in a bad state"),
    ],
    "xid154_pf_flr.log": [
        (RESET, "NVRM: GPU0 nvAssertOkFailedNoLog: Assertion failed: Reset required"),
    ],
    "ogkm446_back_to_back_gsp_timeout_talos.log": [
        (RESET, "NVRM: nvAssertFailedNoLog: Assertion failed: Back to back GSP RPC timeout"),
    ],
    "sichek51_reset_required_no_gpu.log": [
        (RESET, "NVRM: nvAssertOkFailedNoLog: Assertion failed: Reset required"),
    ],
    "dra982_reset_required_gb200.log": [
        (RESET, "NVRM: nvAssertOkFailedNoLog: Assertion failed: Reset required"),
    ],
}

# What each record asks for, by NVIDIA's catalog where the message text decides it: NVLink5
# Xids (144-150) say `Fatal` or `Nonfatal`, Xid 154 names the recovery action it asks for.
ACTIONS: dict[str, list[tuple[XidResolution, bool]]] = {
    "gpud_pr1174_kmsg.log": [
        (R.RESET_GPU, True),
        (R.RESET_GPU, True),
        (R.CONTACT_SUPPORT, False),  # 145 RLW_RXPIPE Nonfatal
        (R.RESTART_APP, False),  # 94 contained
    ],
    "gpud_pr1160_nvlink5_severity.log": [
        (R.CONTACT_SUPPORT, False),  # 144 SAW_MVB Nonfatal
        (R.RESET_GPU, True),
        (R.RESET_GPU, True),
    ],
    "ogkm1150_xid45_after_nvlink5.log": [(R.IGNORE, False)] * 4,
    "nvforum371272_xid62_xid154.log": [(R.RESET_GPU, True), (R.RESET_GPU, True)],
    "xid154_os_reboot_driver610.log": [(R.REBOOT_NODE, True)] * 3,
    "xid154_pf_flr.log": [(R.UNUSED, False), (R.RESET_GPU, True)],
    "xid154_node_reboot_required.log": [(R.REBOOT_NODE, True), (R.RESET_GPU, True)],
    # what an XID would have said is taken as that XID: both take the node out
    "ogkm876_gsp_boot_then_xid120.log": [(R.RESET_GPU, True), (R.RESET_GPU, True)],
    "gsp_rpc_rate_limited_needs_reset_535.log": [(R.RESET_GPU, True)] * 14,
}


def read(name: str) -> list[KernelXid | KernelGpuFault]:
    parser = KernelXidParser()
    return [x for line in (CORPUS / name).read_text().splitlines() if (x := parser.feed(line))]


def xids_in(name: str) -> list[KernelXid]:
    return [x for x in read(name) if isinstance(x, KernelXid)]


def test_every_file_is_a_case_and_documented() -> None:
    provenance = (CORPUS / "PROVENANCE.md").read_text()
    files = {p.name for p in CORPUS.iterdir() if p.suffix == ".log"}
    assert files == set(CASES)
    assert set(FAULTS) <= files
    assert all(f"`{name}`" in provenance for name in files)


@pytest.mark.parametrize("name", sorted(CASES))
def test_realworld_kernel_lines(name: str) -> None:
    found = xids_in(name)
    assert [(x.bus_id, x.xid, x.inferred) for x in found] == [c[:3] for c in CASES[name]]
    for x, case in zip(found, CASES[name], strict=True):
        assert x.message.startswith(case[3])


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_lost_gpu_or_a_reset_said_without_naming_a_gpu(name: str) -> None:
    faults = [x for x in read(name) if isinstance(x, KernelGpuFault)]
    assert [f.resolution for f in faults] == [r for r, _ in FAULTS.get(name, [])]
    for fault, (_, start) in zip(faults, FAULTS.get(name, []), strict=True):
        assert fault.message.startswith(start), fault.message


@pytest.mark.parametrize("name", sorted(ACTIONS))
def test_what_each_real_record_asks_for(name: str) -> None:
    found = xids_in(name)
    got = [(resolution_of(x.xid, x.message), is_fatal(x.xid, x.message)) for x in found]
    assert got == ACTIONS[name]


@pytest.mark.parametrize(
    ("prefix", "line"),
    [
        ("kmsg record", "4,9921,937012345,-;NVRM: Xid (PCI:0000:3b:00.0): 79, pid=1234, GPU"),
        ("journal", "Feb 14 05:03:41 gpu-1 kernel: NVRM: Xid (PCI:0000:3B:00): 79, GPU"),
        (
            "journal short-iso",
            "2026-02-14T05:03:41+0000 gpu-1 kernel: NVRM: Xid (PCI:0000:3b:00): 79,",
        ),
    ],
)
def test_every_way_the_kernel_log_is_read_gives_the_same_xid(prefix: str, line: str) -> None:
    found = KernelXidParser().feed(line)
    assert found is not None and (found.bus_id, found.xid) == ("0000:3b:00", 79), prefix


def test_a_fallen_off_line_of_another_message_is_not_joined_to_a_stale_gpu() -> None:
    parser = KernelXidParser()
    assert parser.feed("NVRM: The NVIDIA GPU 0000:b3:00.0") is None
    for _ in range(5):
        assert parser.feed("kernel: unrelated") is None
    assert parser.feed("NVRM: fallen off the bus and is not responding to commands.") is None


def test_single_line_fallen_off_forms() -> None:
    parser = KernelXidParser()
    one = parser.feed("NVRM: GPU 0000:01:00.0: GPU has fallen off the bus.")
    assert one is not None and (one.bus_id, one.xid, one.inferred) == ("0000:01:00", 79, True)
    assert parser.feed("NVRM: GPU at 0000:03:00: GPU-b850f46d-d5ea-c752-ddf3-c4453e44d3f7") is None
