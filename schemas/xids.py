"""The XID catalog: every code NVIDIA documents, what it means and what to do about it.

One table for the whole project: the node agent's `fatal_xids` check, the streams `fatal_xid`
rule and the dashboards all read it, so they cannot disagree about which XIDs take a node out
of service.

Provenance: NVIDIA's "Analyzing Xid Errors with the Xid Catalog" (XID Errors, part of the GPU
deployment and management documentation), https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html,
catalog for Ampere and newer GPUs, as published with driver R575 / CUDA 12.9 (XIDs 1-172).
`mnemonic`, `description` and `nvidia_action` (the "Resolution Bucket (Immediate Action)"
column) are NVIDIA's words; `resolution` is ours, mapped from that bucket as `_BUCKETS` says.
Where NVIDIA gives no bucket (162-172: free-text guidance only) the choice is ours and says so
in `note`. See schemas/XIDS_PROVENANCE.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from schemas.events.triggers import Severity

XidSeverity = Severity


class XidResolution(StrEnum):
    """What a cluster does about an XID, most severe last."""

    UNUSED = "UNUSED"  # NVIDIA: no current GPU logs it
    IGNORE = "IGNORE"
    CONTACT_SUPPORT = "CONTACT_SUPPORT"  # nothing to do on the node; tell people
    UPDATE_SOFTWARE = "UPDATE_SOFTWARE"
    RESTART_APP = "RESTART_APP"  # the application must restart; the GPU is healthy
    RESET_GPU = "RESET_GPU"  # the GPU needs a reset: drain the node first
    REBOOT_NODE = "REBOOT_NODE"  # bare-metal or VM restart
    SERVICE_NODE = "SERVICE_NODE"  # hands-on: mechanical / hardware

    @property
    def severity(self) -> XidSeverity:
        return _SEVERITY[self]

    @property
    def fatal(self) -> bool:
        """The node must leave service (drain, then reset / reboot / repair)."""
        return self.severity == "critical"


_SEVERITY: dict[XidResolution, XidSeverity] = {
    XidResolution.UNUSED: "info",
    XidResolution.IGNORE: "info",
    XidResolution.CONTACT_SUPPORT: "warning",
    XidResolution.UPDATE_SOFTWARE: "warning",
    XidResolution.RESTART_APP: "warning",
    XidResolution.RESET_GPU: "critical",
    XidResolution.REBOOT_NODE: "critical",
    XidResolution.SERVICE_NODE: "critical",
}

R = XidResolution

# NVIDIA's immediate-action buckets → ours. The WORKFLOW_* buckets of 48 and 74 say in their
# own text "A GPU reset or node reboot is needed to clear this error"; NVLink5's (144-150) turn
# on sub-codes the kernel line carries but NVML does not, so the worst of them (RESET_GPU) is
# taken, unless the line itself says Nonfatal (see resolution_of). Xid 45 is the teardown after
# another error ("Not Solo: IGNORE (follow other Xid)").
_BUCKETS: dict[str, XidResolution] = {
    "IGNORE": R.IGNORE,
    "RESTART_APP": R.RESTART_APP,
    "RESET_GPU": R.RESET_GPU,
    "RESTART_BM": R.REBOOT_NODE,
    "RESTART_VM": R.REBOOT_NODE,
    "CHECK_MECHANICALS": R.SERVICE_NODE,
    "UPDATE_SWFW": R.UPDATE_SOFTWARE,
    "CONTACT_SUPPORT": R.CONTACT_SUPPORT,
    "CHECK_UVM": R.CONTACT_SUPPORT,
    "WORKFLOW_XID_45": R.IGNORE,
    "WORKFLOW_XID_48": R.RESET_GPU,
    "WORKFLOW_NVLINK_ERR": R.RESET_GPU,
    "WORKFLOW_NVLINK5_ERR": R.RESET_GPU,
    "XID_154": R.IGNORE,  # refined from its message, see resolution_of()
}


@dataclass(frozen=True)
class XidInfo:
    code: int
    mnemonic: str
    description: str
    nvidia_action: str  # NVIDIA's immediate-action bucket, or "" where it publishes none
    resolution: XidResolution
    note: str = ""

    @property
    def severity(self) -> XidSeverity:
        return self.resolution.severity

    @property
    def fatal(self) -> bool:
        return self.resolution.fatal


# (code, mnemonic, description, NVIDIA immediate action) exactly as the catalog lists them.
# An "Unused" description with CONTACT_SUPPORT is a code no current GPU logs.
_TABLE: tuple[tuple[int, str, str, str], ...] = (
    (1, "ROBUST_CHANNEL_FIFO_ERROR_FIFO_METHOD", "Unused", "CONTACT_SUPPORT"),
    (2, "ROBUST_CHANNEL_FIFO_ERROR_SW_METHOD", "Unused", "CONTACT_SUPPORT"),
    (3, "ROBUST_CHANNEL_FIFO_ERROR_UNK_METHOD", "Unused", "CONTACT_SUPPORT"),
    (4, "ROBUST_CHANNEL_FIFO_ERROR_CHANNEL_BUSY", "Unused", "CONTACT_SUPPORT"),
    (5, "ROBUST_CHANNEL_FIFO_ERROR_RUNOUT_OVERFLOW", "Unused", "CONTACT_SUPPORT"),
    (6, "ROBUST_CHANNEL_FIFO_ERROR_PARSE_ERR", "Unused", "CONTACT_SUPPORT"),
    (7, "ROBUST_CHANNEL_FIFO_ERROR_PTE_ERR", "Unused", "CONTACT_SUPPORT"),
    (8, "ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT", "GPU stopped processing", "RESTART_APP"),
    (9, "ROBUST_CHANNEL_GR_ERROR_INSTANCE", "Unused", "CONTACT_SUPPORT"),
    (10, "ROBUST_CHANNEL_GR_ERROR_SINGLE_STEP", "Unused", "CONTACT_SUPPORT"),
    (
        11,
        "ROBUST_CHANNEL_GR_ERROR_MISSING_HW",
        "Invalid or corrupted push buffer stream",
        "RESTART_APP",
    ),
    (12, "ROBUST_CHANNEL_GR_ERROR_SW_METHOD", "Unused", "CONTACT_SUPPORT"),
    (
        13,
        "ROBUST_CHANNEL_GR_EXCEPTION / ROBUST_CHANNEL_GR_ERROR_SW_NOTIFY",
        "Graphics Engine Exception",
        "RESTART_APP",
    ),
    (14, "ROBUST_CHANNEL_FAKE_ERROR", "Unused", "IGNORE"),
    (15, "ROBUST_CHANNEL_SCANLINE_TIMEOUT", "Unused", "CONTACT_SUPPORT"),
    (16, "ROBUST_CHANNEL_VBLANK_CALLBACK_TIMEOUT", "Unused", "CONTACT_SUPPORT"),
    (17, "ROBUST_CHANNEL_PARAMETER_ERROR", "Unused", "CONTACT_SUPPORT"),
    (18, "ROBUST_CHANNEL_BUS_MASTER_TIMEOUT_ERROR", "Unused", "CONTACT_SUPPORT"),
    (19, "ROBUST_CHANNEL_DISP_MISSED_NOTIFIER", "Unused", "CONTACT_SUPPORT"),
    (20, "ROBUST_CHANNEL_MPEG_ERROR_SW_METHOD", "Unused", "CONTACT_SUPPORT"),
    (21, "ROBUST_CHANNEL_ME_ERROR_SW_METHOD", "Unused", "CONTACT_SUPPORT"),
    (22, "ROBUST_CHANNEL_VP_ERROR_SW_METHOD", "Unused", "CONTACT_SUPPORT"),
    (23, "ROBUST_CHANNEL_RC_LOGGING_ENABLED", "Unused", "CONTACT_SUPPORT"),
    (24, "ROBUST_CHANNEL_GR_SEMAPHORE_TIMEOUT", "Unused", "CONTACT_SUPPORT"),
    (
        25,
        "ROBUST_CHANNEL_GR_ILLEGAL_NOTIFY",
        "Invalid or illegal push buffer stream",
        "RESTART_APP",
    ),
    (26, "ROBUST_CHANNEL_FIFO_ERROR_FBISTATE_TIMEOUT", "Unused", "CONTACT_SUPPORT"),
    (27, "ROBUST_CHANNEL_VP_ERROR", "Unused", "CONTACT_SUPPORT"),
    (28, "ROBUST_CHANNEL_VP2_ERROR", "Unused", "CONTACT_SUPPORT"),
    (29, "ROBUST_CHANNEL_BSP_ERROR", "Unused", "CONTACT_SUPPORT"),
    (30, "ROBUST_CHANNEL_BAD_ADDR_ACCESS", "Unused", "CONTACT_SUPPORT"),
    (31, "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", "GPU memory page fault", "RESTART_APP"),
    (32, "ROBUST_CHANNEL_PBDMA_ERROR", "Invalid or corrupted push buffer stream", "RESTART_APP"),
    (33, "ROBUST_CHANNEL_SEC_ERROR", "Unused", "CONTACT_SUPPORT"),
    (34, "ROBUST_CHANNEL_MSVLD_ERROR", "Unused", "CONTACT_SUPPORT"),
    (35, "ROBUST_CHANNEL_MSPDEC_ERROR", "Unused", "CONTACT_SUPPORT"),
    (36, "ROBUST_CHANNEL_MSPPP_ERROR", "Unused", "CONTACT_SUPPORT"),
    (37, "ROBUST_CHANNEL_FECS_ERR_UNIMP_FIRMWARE_METHOD", "Driver firmware error", "IGNORE"),
    (38, "ROBUST_CHANNEL_FECS_ERR_WATCHDOG_TIMEOUT", "Driver firmware error", "IGNORE"),
    (39, "ROBUST_CHANNEL_CE0_ERROR", "Copy Engine Exception", "RESTART_APP"),
    (40, "ROBUST_CHANNEL_CE1_ERROR", "Copy Engine Exception", "RESTART_APP"),
    (41, "ROBUST_CHANNEL_CE2_ERROR", "Copy Engine Exception", "RESTART_APP"),
    (42, "ROBUST_CHANNEL_VIC_ERROR", "Unused", "CONTACT_SUPPORT"),
    (43, "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", "GPU stopped processing", "IGNORE"),
    (
        44,
        "ROBUST_CHANNEL_GR_FAULT_DURING_CTXSW",
        "Graphics Engine fault during context switch",
        "IGNORE",
    ),
    (
        45,
        "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL",
        "Preemptive cleanup, due to previous errors – Most likely to see when running multiple "  # noqa: RUF001
        "cuda applications and hitting a DBE",
        "WORKFLOW_XID_45",
    ),
    (46, "ROBUST_CHANNEL_GPU_TIMEOUT_ERROR", "GPU stopped processing", "RESET_GPU"),
    (47, "ROBUST_CHANNEL_NVENC0_ERROR", "Unused", "CONTACT_SUPPORT"),
    (48, "ROBUST_CHANNEL_GPU_ECC_DBE", "Double Bit ECC Error", "WORKFLOW_XID_48"),
    (49, "SILENT_RUNNING_CONSTANT_LEVEL_SET_BY_REGISTRY", "Unused", "CONTACT_SUPPORT"),
    (50, "SILENT_RUNNING_LEVEL_TRANSITION_DUE_TO_RC_ERROR", "Unused", "CONTACT_SUPPORT"),
    (51, "SILENT_RUNNING_STRESS_TEST_FAILURE", "Unused", "CONTACT_SUPPORT"),
    (52, "SILENT_RUNNING_LEVEL_TRANS_DUE_TO_TEMP_RISE", "Unused", "CONTACT_SUPPORT"),
    (53, "SILENT_RUNNING_TEMP_REDUCED_CLOCKING", "Unused", "CONTACT_SUPPORT"),
    (
        54,
        "SILENT_RUNNING_PWR_REDUCED_CLOCKING",
        "Auxiliary power is not connected to the GPU board",
        "CHECK_MECHANICALS",
    ),
    (55, "SILENT_RUNNING_TEMPERATURE_READ_ERROR", "Unused", "CONTACT_SUPPORT"),
    (56, "DISPLAY_CHANNEL_EXCEPTION", "Unused", "CONTACT_SUPPORT"),
    (57, "FB_LINK_TRAINING_FAILURE_ERROR", "Unused", "CONTACT_SUPPORT"),
    (58, "FB_MEMORY_ERROR", "Unused", "CONTACT_SUPPORT"),
    (59, "PMU_ERROR", "Unused", "CONTACT_SUPPORT"),
    (60, "ROBUST_CHANNEL_SEC2_ERROR", "Video processor exception", "RESTART_APP"),
    (61, "PMU_BREAKPOINT", "Unused", "CONTACT_SUPPORT"),
    (62, "PMU_HALT_ERROR", "Internal micro-controller halt (newer drivers)", "RESET_GPU"),
    (63, "INFOROM_DRAM_RETIREMENT_EVENT", "GPU memory remapping event", "IGNORE"),
    (64, "INFOROM_DRAM_RETIREMENT_FAILURE", "GPU memory remapping failure", "RESET_GPU"),
    (65, "ROBUST_CHANNEL_NVENC1_ERROR", "Unused", "CONTACT_SUPPORT"),
    (66, "ROBUST_CHANNEL_FECS_ERR_REG_ACCESS_VIOLATION", "Illegal access by driver", "IGNORE"),
    (67, "ROBUST_CHANNEL_FECS_ERR_VERIF_VIOLATION", "Illegal access by driver", "IGNORE"),
    (68, "ROBUST_CHANNEL_NVDEC0_ERROR", "NVDEC0 Exception", "RESTART_APP"),
    (69, "ROBUST_CHANNEL_GR_CLASS_ERROR", "Graphics Engine class error", "RESTART_APP"),
    (70, "ROBUST_CHANNEL_CE3_ERROR", "CE3: Unknown Error", "RESTART_APP"),
    (71, "ROBUST_CHANNEL_CE4_ERROR", "CE4: Unknown Error", "RESTART_APP"),
    (72, "ROBUST_CHANNEL_CE5_ERROR", "CE5: Unknown Error", "RESTART_APP"),
    (73, "ROBUST_CHANNEL_NVENC2_ERROR", "Unused", "CONTACT_SUPPORT"),
    (74, "NVLINK_ERROR", "NVLINK Error", "WORKFLOW_NVLINK_ERR"),
    (75, "ROBUST_CHANNEL_CE6_ERROR", "CE6: Unknown Error", "RESTART_APP"),
    (76, "ROBUST_CHANNEL_CE7_ERROR", "CE7: Unknown Error", "RESTART_APP"),
    (77, "ROBUST_CHANNEL_CE8_ERROR", "CE8: Unknown Error", "RESTART_APP"),
    (78, "VGPU_START_ERROR", "vGPU Start Error", "UPDATE_SWFW"),
    (79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "GPU has fallen off the bus", "RESTART_BM"),
    (80, "PBDMA_PUSHBUFFER_CRC_MISMATCH", "Corrupted data sent to GPU", "RESTART_APP"),
    (81, "ROBUST_CHANNEL_VGA_SUBSYSTEM_ERROR", "Unused", "CONTACT_SUPPORT"),
    (82, "ROBUST_CHANNEL_NVJPG0_ERROR", "NVJPG0 Error", "RESTART_APP"),
    (83, "ROBUST_CHANNEL_NVDEC1_ERROR", "NVDEC1 Error", "RESTART_APP"),
    (84, "ROBUST_CHANNEL_NVDEC2_ERROR", "NVDEC2 Error", "RESTART_APP"),
    (85, "ROBUST_CHANNEL_CE9_ERROR", "CE9: Unknown Error", "RESTART_APP"),
    (86, "ROBUST_CHANNEL_OFA0_ERROR", "OFA Exception", "RESTART_APP"),
    (87, "NVTELEMETRY_DRIVER_REPORT", "Unused", "CONTACT_SUPPORT"),
    (88, "ROBUST_CHANNEL_NVDEC3_ERROR", "NVDEC3 Error", "RESTART_APP"),
    (89, "ROBUST_CHANNEL_NVDEC4_ERROR", "NVDEC4 Error", "RESTART_APP"),
    (90, "LTC_ERROR", "Unused", "CONTACT_SUPPORT"),
    (91, "RESERVED_XID", "Unused", "CONTACT_SUPPORT"),
    (92, "EXCESSIVE_SBE_INTERRUPTS", "High single-bit ECC error rate", "IGNORE"),
    (
        93,
        "INFOROM_ERASE_LIMIT_EXCEEDED",
        "Non-fatal violation of provisioned InfoROM wear limit",
        "IGNORE",
    ),
    (94, "ROBUST_CHANNEL_CONTAINED_ERROR", "Contained memory error", "RESTART_APP"),
    (95, "ROBUST_CHANNEL_UNCONTAINED_ERROR", "Uncontained memory error", "RESET_GPU"),
    (96, "ROBUST_CHANNEL_NVDEC5_ERROR", "NVDEC5 Error", "RESTART_APP"),
    (97, "ROBUST_CHANNEL_NVDEC6_ERROR", "NVDEC6 Error", "RESTART_APP"),
    (98, "ROBUST_CHANNEL_NVDEC7_ERROR", "NVDEC7 Error", "RESTART_APP"),
    (99, "ROBUST_CHANNEL_NVJPG1_ERROR", "NVJPG1 Error", "RESTART_APP"),
    (100, "ROBUST_CHANNEL_NVJPG2_ERROR", "NVJPG2 Error", "RESTART_APP"),
    (101, "ROBUST_CHANNEL_NVJPG3_ERROR", "NVJPG3 Error", "RESTART_APP"),
    (102, "ROBUST_CHANNEL_NVJPG4_ERROR", "NVJPG4 Error", "RESTART_APP"),
    (103, "ROBUST_CHANNEL_NVJPG5_ERROR", "NVJPG5 Error", "RESTART_APP"),
    (104, "ROBUST_CHANNEL_NVJPG6_ERROR", "NVJPG6 Error", "RESTART_APP"),
    (105, "ROBUST_CHANNEL_NVJPG7_ERROR", "NVJPG7 Error", "RESTART_APP"),
    (106, "SMBPBI_TEST_MESSAGE", "SMBPBI Test Message", "IGNORE"),
    (107, "SMBPBI_TEST_MESSAGE_SILENT", "SMBPBI Test Message Silent", "IGNORE"),
    (108, "NVLINK_REMOTE_TRANSLATION_ERROR", "Unused", "IGNORE"),
    (109, "ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR", "Context Switch Timeout Error", "RESET_GPU"),
    (110, "SEC_FAULT_ERROR", "Security Fault Error", "RESET_GPU"),
    (111, "BUNDLE_ERROR_EVENT", "Unused", "CONTACT_SUPPORT"),
    (112, "DISP_SUPERVISOR_ERROR", "Unused", "CONTACT_SUPPORT"),
    (113, "DP_LT_FAILURE", "Unused", "CONTACT_SUPPORT"),
    (114, "HEAD_RG_UNDERFLOW", "Unused", "CONTACT_SUPPORT"),
    (115, "CORE_CHANNEL_REGS", "Unused", "CONTACT_SUPPORT"),
    (116, "WINDOW_CHANNEL_REGS", "Unused", "CONTACT_SUPPORT"),
    (117, "CURSOR_CHANNEL_REGS", "Unused", "CONTACT_SUPPORT"),
    (118, "HEAD_REGS", "Unused", "CONTACT_SUPPORT"),
    (119, "GSP_RPC_TIMEOUT", "GSP RPC Timeout", "RESET_GPU"),
    (120, "GSP_ERROR", "GSP Error", "RESET_GPU"),
    (121, "C2C_ERROR", "C2C Error", "IGNORE"),
    (122, "SPI_PMU_RPC_READ_FAIL", "Unused", "CONTACT_SUPPORT"),
    (123, "SPI_PMU_RPC_WRITE_FAIL", "Unused", "CONTACT_SUPPORT"),
    (124, "SPI_PMU_RPC_ERASE_FAIL", "Unused", "CONTACT_SUPPORT"),
    (125, "INFOROM_FS_ERROR", "Unused", "CONTACT_SUPPORT"),
    (126, "ROBUST_CHANNEL_CE10_ERROR", "CE10: Unknown Error", "RESTART_APP"),
    (127, "ROBUST_CHANNEL_CE11_ERROR", "CE11: Unknown Error", "RESTART_APP"),
    (128, "ROBUST_CHANNEL_CE12_ERROR", "CE12: Unknown Error", "RESTART_APP"),
    (129, "ROBUST_CHANNEL_CE13_ERROR", "CE13: Unknown Error", "RESTART_APP"),
    (130, "ROBUST_CHANNEL_CE14_ERROR", "CE14: Unknown Error", "RESTART_APP"),
    (131, "ROBUST_CHANNEL_CE15_ERROR", "CE15: Unknown Error", "RESTART_APP"),
    (132, "ROBUST_CHANNEL_CE16_ERROR", "CE16: Unknown Error", "RESTART_APP"),
    (133, "ROBUST_CHANNEL_CE17_ERROR", "CE17: Unknown Error", "RESTART_APP"),
    (134, "ROBUST_CHANNEL_CE18_ERROR", "CE18: Unknown Error", "RESTART_APP"),
    (135, "ROBUST_CHANNEL_CE19_ERROR", "CE19: Unknown Error", "RESTART_APP"),
    (136, "ALI_TRAINING_FAIL", "Link Training Failed", "RESET_GPU"),
    (137, "NVLINK_PRIV_ERR", "NVLink Privilege Error", "IGNORE"),
    (138, "ROBUST_CHANNEL_DLA_ERROR", "Unused", "CONTACT_SUPPORT"),
    (139, "ROBUST_CHANNEL_OFA1_ERROR", "OFA1 Error", "RESTART_APP"),
    (140, "UNRECOVERABLE_ECC_ERROR_ESCAPE", "ECC Unrecovered Error", "RESET_GPU"),
    (141, "ROBUST_CHANNEL_FAST_PATH_ERROR", "CUDA Fast Path Error", "IGNORE"),
    (142, "ROBUST_CHANNEL_NVENC3_ERROR", "NVENC3 Error", "CONTACT_SUPPORT"),
    (143, "GPU_INIT_ERROR", "GPU Initialization Error", "RESET_GPU"),
    (144, "NVLINK_SAW_ERROR", "NVLINK: SAW Error", "WORKFLOW_NVLINK5_ERR"),
    (145, "NVLINK_RLW_ERROR", "NVLINK: RLW Error", "WORKFLOW_NVLINK5_ERR"),
    (146, "NVLINK_TLW_ERROR", "NVLINK: TLW Error", "WORKFLOW_NVLINK5_ERR"),
    (147, "NVLINK_TREX_ERROR", "NVLINK: TREX Error", "WORKFLOW_NVLINK5_ERR"),
    (148, "NVLINK_NVLPW_CTRL_ERROR", "NVLINK: NVLPW_CTRL Error", "WORKFLOW_NVLINK5_ERR"),
    (149, "NVLINK_NETIR_ERROR", "NVLINK: NETIR Error", "WORKFLOW_NVLINK5_ERR"),
    (150, "NVLINK_MSE_ERROR", "NVLINK: MSE Error", "WORKFLOW_NVLINK5_ERR"),
    (151, "ROBUST_CHANNEL_KEY_ROTATION_ERROR", "Key rotation Error", "RESTART_VM"),
    (152, "ROBUST_CHANNEL_DLA_SMMU_ERROR", "DLA SMMU Error", "IGNORE"),
    (153, "ROBUST_CHANNEL_DLA_TIMEOUT", "DLA timeout Error", "IGNORE"),
    (154, "GPU_RECOVERY_ACTION_CHANGED", "GPU Recovery Action Changed", "XID_154"),
    (155, "NVLINK_SW_DEFINED_ERROR", "NVLINK: SW Defined Error", "RESET_GPU"),
    (156, "RESOURCE_RETIREMENT_EVENT", "Resource Retirement Event", "RESET_GPU"),
    (157, "RESOURCE_RETIREMENT_FAILURE", "Resource Retirement Failure", "IGNORE"),
    (158, "GPU_FATAL_TIMEOUT", "GPU Fatal Timeout", "RESET_GPU"),
    (159, "ROBUST_CHANNEL_CHI_NON_DATA_ERROR", "CHI Non-Data Error", "CHECK_UVM"),
    (160, "CHANNEL_RETIREMENT_EVENT", "Channel Retirement Event", "IGNORE"),
    (161, "CHANNEL_RETIREMENT_FAILURE", "Channel Retirement Failure", "IGNORE"),
    (162, "PSHC_REENGAGED", "Power Smoothing HW Circuitry capability reengaged", ""),
    (163, "PSHC_DISENGAGED", "Power Smoothing HW Circuitry capability disengaged", ""),
    (164, "PSHC_LOW_LIFETIME", "Power Smoothing HW Circuitry low lifetime reached", ""),
    (165, "PSHC_ZERO_LIFETIME", "Power Smoothing HW Circuitry lifetime exhausted", ""),
    (
        166,
        "NVLINK_SECURE_CRYPTO_ERR",
        "CC traffic seen prior to link properly being configured for encrypted traffic",
        "",
    ),
    (167, "PCIE_FATAL_TIMEOUT", "PCIE_FATAL_TIMEOUT", ""),
    (168, "REDUCED_GPU_MEMORY_CAPACITY", "Errors found in WPR (write protected region)", ""),
    (169, "SEC2_HALT_ERROR", "Internal micro-controller halt", ""),
    (170, "NVLINK_SECURE_OTHER", "Interrupt seen in CC mode", ""),
    (
        171,
        "UNCORRECTABLE_DRAM_ERROR",
        "Additional to Xid 48 providing more details on particulars of fault to differentiate "
        "DRAM/SRAM",
        "",
    ),
    (
        172,
        "UNCORRECTABLE_SRAM_ERROR",
        "Additional to Xid 48 providing more details on particulars of fault to differentiate "
        "DRAM/SRAM",
        "",
    ),
)

# Codes NVIDIA publishes without a bucket: our resolution and why.
_OURS: dict[int, tuple[XidResolution, str]] = {
    162: (R.IGNORE, "power smoothing came back; informational"),
    163: (R.IGNORE, "NVIDIA: 'No GPU reset required'"),
    164: (R.CONTACT_SUPPORT, "NVIDIA: monitor power swings, expect to replace GPUs"),
    165: (R.CONTACT_SUPPORT, "NVIDIA: replace GPUs if power swings are not acceptable"),
    166: (R.CONTACT_SUPPORT, "confidential-computing mode only"),
    167: (R.RESET_GPU, "no bucket published; a fatal PCIe timeout is treated like Xid 79/158"),
    168: (R.REBOOT_NODE, "NVIDIA: enable ECC or re-attempt boot with shifted WPR"),
    169: (R.RESET_GPU, "no bucket published; micro-controller halt treated like Xid 62"),
    170: (R.CONTACT_SUPPORT, "confidential-computing mode only"),
    171: (R.RESET_GPU, "companion of Xid 48, which needs a GPU reset"),
    172: (R.RESET_GPU, "companion of Xid 48, which needs a GPU reset"),
}


def _info(code: int, mnemonic: str, description: str, action: str) -> XidInfo:
    if code in _OURS:
        resolution, note = _OURS[code]
        return XidInfo(code, mnemonic, description, action, resolution, note)
    if description == "Unused" and action == "CONTACT_SUPPORT":
        return XidInfo(code, mnemonic, description, action, R.UNUSED)
    return XidInfo(code, mnemonic, description, action, _BUCKETS[action])


XID_CATALOG: dict[int, XidInfo] = {row[0]: _info(*row) for row in _TABLE}

FATAL_XIDS: frozenset[int] = frozenset(c for c, info in XID_CATALOG.items() if info.fatal)

# An XID NVIDIA has not documented (a newer driver than this table): noticed, not acted on.
UNKNOWN_RESOLUTION = R.CONTACT_SUPPORT

# Xid 154 carries the recovery action of the XIDs it follows in its text, e.g.
# "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)". The number is
# NVML's nvmlDeviceGpuRecoveryAction_t, whatever words a driver prints beside it (drivers 610+
# say "OS Reboot" and "PF FLR" for 0x2 and 0x1).
_RECOVERY_154 = re.compile(r"changed from .*? to 0x([0-9a-fA-F]+)(?: \(([^)]*)\))?")
_RECOVERY_ACTIONS: dict[int, XidResolution] = {
    0: R.IGNORE,  # none
    1: R.RESET_GPU,  # GPU reset
    2: R.REBOOT_NODE,  # node reboot
    3: R.RESET_GPU,  # drain P2P, then reset
    4: R.RESET_GPU,  # drain P2P and reset the GPU
    5: R.CONTACT_SUPPORT,  # recover the IMEX (multi-node NVLink) domain: nothing node-local
    6: R.RESET_GPU,  # reset the GPU's PCIe bus
    7: R.REBOOT_NODE,  # reboot the system
}
_RECOVERY_WORDS: dict[str, XidResolution] = {
    "none": R.IGNORE,
    "gpu reset required": R.RESET_GPU,
    "node reboot required": R.REBOOT_NODE,
    "drain p2p": R.RESET_GPU,
    "drain and reset": R.RESET_GPU,
}
# NVLink5 Xids say in their text whether the error is fatal: "149, NETIR_LINK_EVT Fatal …",
# "145, RLW_RXPIPE Nonfatal …". A non-fatal one leaves the link and the GPU in service.
NVLINK5_XIDS = range(144, 151)
_NVLINK5_SEVERITY = re.compile(r"^[^(]*?\b(Nonfatal|Fatal)\b")


def _told_by_message(code: int, message: str | None) -> XidResolution | None:
    if not message:
        return None
    if code == 154 and (m := _RECOVERY_154.search(message)):
        by_number = _RECOVERY_ACTIONS.get(int(m.group(1), 16))
        by_words = _RECOVERY_WORDS.get((m.group(2) or "").strip().lower())
        return by_number or by_words or UNKNOWN_RESOLUTION
    if code in NVLINK5_XIDS and (m := _NVLINK5_SEVERITY.search(message.split(f"{code},", 1)[-1])):
        return R.CONTACT_SUPPORT if m.group(1) == "Nonfatal" else R.RESET_GPU
    return None


def resolution_of(code: int, message: str | None = None) -> XidResolution:
    """What to do about XID `code`; where the catalog says the message decides (Xid 154's
    recovery action, NVLink5's Fatal/Nonfatal), its text does."""
    told = _told_by_message(code, message)
    if told is not None:
        return told
    info = XID_CATALOG.get(code)
    return info.resolution if info else UNKNOWN_RESOLUTION


def is_fatal(code: int, message: str | None = None, fatal: frozenset[int] = FATAL_XIDS) -> bool:
    """Whether XID `code` takes the node out of service, given the fatal set in force.

    Xid 154 is judged by the action its message names, whatever the set says of 154; an
    NVLink5 Xid whose message says Nonfatal is not fatal (one that says Fatal follows the set).
    """
    told = _told_by_message(code, message)
    if told is not None and (code == 154 or not told.fatal):
        return told.fatal
    return code in fatal


def describe(code: int) -> str:
    info = XID_CATALOG.get(code)
    return f"Xid {code} ({info.description})" if info else f"Xid {code} (not in NVIDIA's catalog)"
