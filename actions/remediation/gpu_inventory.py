"""This node's GPUs as a person servicing it needs them, one JSON line:
`python -m actions.remediation.gpu_inventory --json` (index, UUID, board serial, PCI bus id,
product name, from NVML through nvidia-smi). Run on a node escalated for hardware service, so
the ticket names the boards to look at.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from actions.remediation import nvidia_smi

KIND = "centrality-gpu-inventory"
FIELDS = ["index", "uuid", "serial", "pci.bus_id", "name"]


def inventory() -> list[dict[str, Any]]:
    return [
        {
            "gpu": int(row["index"]),
            "uuid": row["uuid"],
            "serial": row["serial"],
            "pci_bus_id": row["pci.bus_id"],
            "name": row["name"],
        }
        for row in nvidia_smi.query("gpu", FIELDS)
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--node", default=None, help="the node's name in the report")
    p.add_argument("--json", action="store_true", help="one JSON line (the only output)")
    args = p.parse_args(argv)
    report: dict[str, Any] = {"kind": KIND, "node": args.node or nvidia_smi.node_name()}
    try:
        report |= {"gpus": inventory(), "error": None}
    except nvidia_smi.SmiError as exc:
        report |= {"gpus": [], "error": str(exc)}
    print(json.dumps(report), flush=True)
    return 0 if report["error"] is None else 1


if __name__ == "__main__":
    sys.exit(main())
