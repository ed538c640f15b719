"""Reset this node's GPUs and print one JSON line: `python -m actions.remediation.gpu_reset --json`.

The ladder's reset rung, run on the node by a job there (the scheduler adapter's
`run_on_nodes`, on a drained node). Each GPU asked for is reset with `nvidia-smi -r -i N` only
when no process has a compute context on it; a GPU in use is left alone and reported busy, so
the rung fails and the ladder climbs on (a reboot clears what a reset could not).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from actions.remediation import nvidia_smi

KIND = "centrality-gpu-reset"


def reset(gpu: int) -> dict[str, Any]:
    try:
        pids = nvidia_smi.processes_on(gpu)
        if pids:
            return {"gpu": gpu, "reset": False, "pids": pids, "error": "in use"}
        answer = nvidia_smi.run("-r", "-i", str(gpu))
    except nvidia_smi.SmiError as exc:
        return {"gpu": gpu, "reset": False, "pids": [], "error": str(exc)}
    if answer.code != 0:
        words = (answer.out + answer.err).strip() or f"exit code {answer.code}"
        return {"gpu": gpu, "reset": False, "pids": [], "error": words[-500:]}
    return {"gpu": gpu, "reset": True, "pids": [], "error": None}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--gpus", default="", help="comma-separated GPU indexes; none: every GPU")
    p.add_argument("--node", default=None, help="the node's name in the report")
    p.add_argument("--json", action="store_true", help="one JSON line (the only output)")
    args = p.parse_args(argv)
    report: dict[str, Any] = {"kind": KIND, "node": args.node or nvidia_smi.node_name()}
    try:
        gpus = [int(g) for g in args.gpus.split(",") if g] or nvidia_smi.gpu_indexes()
        report["gpus"] = [reset(g) for g in gpus]
        report["error"] = None if gpus else "no GPU on this node"
    except nvidia_smi.SmiError as exc:
        report |= {"gpus": [], "error": str(exc)}
    print(json.dumps(report), flush=True)
    done = report["error"] is None and all(g["reset"] for g in report["gpus"])
    return 0 if done else 1


if __name__ == "__main__":
    sys.exit(main())
