"""A stand-in for `nvidia-smi` on machines without GPUs: it answers the queries the node tools
make in the very format the real one does (tests/fixtures/realworld/nvidia-smi, an H200), and
records every call, so a test can see that a GPU in use was never reset.

State lives in `$FAKE_NVIDIA_SMI_DIR`: `gpus` (how many, default 2), `busy-<gpu>` (pids using
that GPU, one a line; `busy-<node>-<gpu>` for one node of a cluster on one host), `calls` (one
line per call: the node, then the arguments). Installed on PATH by `install`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "realworld" / "nvidia-smi"


def _state() -> Path:
    return Path(os.environ["FAKE_NVIDIA_SMI_DIR"])


def _node() -> str:
    return os.environ.get("SLURMD_NODENAME") or os.environ.get("CENTRALITY_NODE") or "-"


def _gpus() -> int:
    count = _state() / "gpus"
    return int(count.read_text()) if count.exists() else 2


def _busy(gpu: int) -> list[str]:
    for name in (f"busy-{_node()}-{gpu}", f"busy-{gpu}"):
        path = _state() / name
        if path.exists():
            return path.read_text().split()
    return []


def _row(gpu: int) -> dict[str, str]:
    """The captured H200's row, renumbered for GPU `gpu`."""
    _, uuid, serial, _, name = (FIXTURES / "h200_query_gpu.csv").read_text().strip().split(", ")
    return {
        "index": str(gpu),
        "uuid": f"{uuid[:-2]}{gpu:02x}",
        "serial": str(int(serial) + gpu),
        "pci.bus_id": f"00000000:{0x06 + gpu:02X}:00.0",
        "name": name,
    }


def main(args: list[str]) -> int:
    with (_state() / "calls").open("a") as calls:
        calls.write(" ".join([_node(), *args]) + "\n")
    selected = int(args[args.index("-i") + 1]) if "-i" in args else None
    if selected is not None and selected >= _gpus():
        print((FIXTURES / "h200_no_such_gpu.txt").read_text().strip())
        return 6
    if "-r" in args:
        if _busy(selected or 0):
            print(f"Unable to reset GPU {selected}: in use by another client", file=sys.stderr)
            return 255
        print(f"GPU {_row(selected or 0)['pci.bus_id']} was reset.")
        return 0
    query = next((a for a in args if a.startswith("--query-")), "")
    what, _, fields = query.removeprefix("--query-").partition("=")
    names = fields.split(",")
    if what == "gpu":
        for gpu in range(_gpus()):
            print(", ".join(_row(gpu)[n] for n in names))
        return 0
    if what == "compute-apps":
        for gpu in range(_gpus()) if selected is None else [selected]:
            for pid in _busy(gpu):
                row = {"pid": pid, "gpu_uuid": _row(gpu)["uuid"], "process_name": "python3"}
                print(", ".join(row[n] for n in names))
        return 0
    print(f"fake nvidia-smi: {' '.join(args)} is not answered here", file=sys.stderr)
    return 2


def install(where: Path, gpus: int = 2) -> Path:
    """`nvidia-smi` in `where/bin` (to put first on PATH), its state in `where`."""
    (where / "bin").mkdir(parents=True, exist_ok=True)
    (where / "gpus").write_text(str(gpus))
    tool = where / "bin" / "nvidia-smi"
    tool.write_text(
        f'#!/bin/sh\nFAKE_NVIDIA_SMI_DIR="{where}" exec {sys.executable} {Path(__file__)} "$@"\n'
    )
    tool.chmod(0o755)
    return where / "bin"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
