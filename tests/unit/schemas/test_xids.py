"""The XID catalog, and that everything naming fatal XIDs reads it."""

import json
import re
import time
from pathlib import Path

import pytest

from collectors.agent.settings import AgentSettings
from collectors.gpu.backend import Xid
from collectors.health.builtin.fatal_xids import fatal_xids
from schemas.events.nodes import HealthStatus
from schemas.xids import FATAL_XIDS, XID_CATALOG, XidResolution, is_fatal, resolution_of
from streams.rules.builtin.fatal_xid import FatalXidConfig, fatal_xid
from streams.state.node import Node
from streams.testing import xid as xid_event
from tests.unit.collectors.test_health import ctx

R = XidResolution
DASHBOARDS = Path(__file__).parents[3] / "dashboards" / "json"


def test_every_documented_code_is_there_with_nvidias_words() -> None:
    assert sorted(XID_CATALOG) == list(range(1, 173))
    assert all(info.description and info.mnemonic for info in XID_CATALOG.values())
    assert XID_CATALOG[79].mnemonic == "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS"
    assert XID_CATALOG[79].description == "GPU has fallen off the bus"
    assert XID_CATALOG[79].nvidia_action == "RESTART_BM"


# (code, resolution, fatal): NVIDIA's immediate-action column, read off the catalog by hand.
CATALOG_CASES = [
    (8, R.RESTART_APP, False),  # GPU stopped processing
    (13, R.RESTART_APP, False),  # Graphics Engine Exception: usually the application
    (31, R.RESTART_APP, False),  # GPU memory page fault
    (43, R.IGNORE, False),
    (45, R.IGNORE, False),  # teardown after another error
    (46, R.RESET_GPU, True),
    (48, R.RESET_GPU, True),  # double bit ECC: "A GPU reset or node reboot is needed"
    (54, R.SERVICE_NODE, True),  # auxiliary power not connected
    (61, R.UNUSED, False),
    (62, R.RESET_GPU, True),
    (63, R.IGNORE, False),  # row remapping event
    (64, R.RESET_GPU, True),  # row remapping failure
    (74, R.RESET_GPU, True),  # NVLink error
    (79, R.REBOOT_NODE, True),
    (92, R.IGNORE, False),  # high single-bit rate
    (94, R.RESTART_APP, False),  # contained
    (95, R.RESET_GPU, True),  # uncontained
    (109, R.RESET_GPU, True),
    (119, R.RESET_GPU, True),
    (120, R.RESET_GPU, True),
    (136, R.RESET_GPU, True),
    (140, R.RESET_GPU, True),
    (143, R.RESET_GPU, True),
    (145, R.RESET_GPU, True),
    (149, R.RESET_GPU, True),
    (151, R.REBOOT_NODE, True),  # RESTART_VM
    (157, R.IGNORE, False),
    (158, R.RESET_GPU, True),
    (163, R.IGNORE, False),
    (999, R.CONTACT_SUPPORT, False),  # not in the catalog
]


@pytest.mark.parametrize(("code", "resolution", "fatal"), CATALOG_CASES)
def test_resolution_and_fatality(code: int, resolution: XidResolution, fatal: bool) -> None:
    assert resolution_of(code) == resolution
    assert is_fatal(code) is fatal
    assert (code in FATAL_XIDS) is fatal


# The examples NVIDIA's catalog gives for Xid 154's text, and what each asks for.
XID_154 = [
    ("GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)", R.REBOOT_NODE),
    ("GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)", R.RESET_GPU),
    ("GPU recovery action changed from 0x0 (None) to 0x1 (Drain and Reset)", R.RESET_GPU),
    ("GPU recovery action changed from 0x2 (Node Reboot Required) to 0x0 (None)", R.IGNORE),
    (None, R.IGNORE),
]


@pytest.mark.parametrize(("message", "resolution"), XID_154)
def test_xid_154_follows_the_action_its_message_names(
    message: str | None, resolution: XidResolution
) -> None:
    assert resolution_of(154, message) == resolution
    assert is_fatal(154, message) is resolution.fatal


def test_agent_check_rule_and_dashboard_read_the_same_fatal_set() -> None:
    assert set(AgentSettings(node="n", kernel_log="none").fatal_xids) == FATAL_XIDS
    assert FatalXidConfig().xids == FATAL_XIDS
    sql = [
        t["rawSql"]
        for board in DASHBOARDS.glob("*.json")
        for panel in json.loads(board.read_text())["panels"]
        for t in panel["targets"]
    ]
    named = [m for s in sql for m in re.findall(r"\bxid IN \(([\d, ]+)\)", s)]
    assert named, "a dashboard names the fatal XIDs"
    for listed in named:
        assert {int(c) for c in listed.split(",")} == FATAL_XIDS


@pytest.mark.parametrize("code", [*range(1, 173), 200])
def test_the_agent_check_and_the_rule_agree_on_every_code(code: int) -> None:
    check = fatal_xids(ctx(fatal_xids=FATAL_XIDS, xids=[(time.monotonic(), Xid(gpu=0, xid=code))]))
    event = xid_event("n1", code)
    decided = list(fatal_xid(Node.new(event), event, FatalXidConfig()))
    assert (check.status == HealthStatus.CRITICAL) == bool(decided) == (code in FATAL_XIDS)


def test_the_rule_says_what_the_xid_is_in_its_reason() -> None:
    event = xid_event("n1", 79)
    [quarantine] = fatal_xid(Node.new(event), event, FatalXidConfig())
    assert quarantine.payload.reason == "Xid 79 (GPU has fallen off the bus) on GPU 0"
