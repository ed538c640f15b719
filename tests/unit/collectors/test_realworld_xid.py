"""Kernel-log XID lines captured from public sources (tests/fixtures/realworld/xid/PROVENANCE.md).

Expected values were read off each line by hand.
"""

from pathlib import Path

import pytest

from collectors.gpu.kernel_xids import KernelXidParser
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
    # A lost GPU that the driver cannot name by bus: nothing to pin on a GPU.
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
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_realworld_kernel_lines(name: str) -> None:
    parser = KernelXidParser()
    found = [x for line in (CORPUS / name).read_text().splitlines() if (x := parser.feed(line))]
    assert [(x.bus_id, x.xid, x.inferred) for x in found] == [c[:3] for c in CASES[name]]
    for x, case in zip(found, CASES[name], strict=True):
        assert x.message.startswith(case[3])


@pytest.mark.parametrize("name", sorted(ACTIONS))
def test_what_each_real_record_asks_for(name: str) -> None:
    parser = KernelXidParser()
    found = [x for line in (CORPUS / name).read_text().splitlines() if (x := parser.feed(line))]
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
