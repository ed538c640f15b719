"""Benchmark this node's GPUs and print one JSON line: `python -m actions.benchmark.runner --json`.

Runs on the target node, so it imports nothing of ours and only the standard library, plus torch
when present: GEMM TFLOP/s (bf16 or fp16) and device memory bandwidth per GPU, and NCCL
all-reduce bus bandwidth across the node's GPUs (nccl-tests' `all_reduce_perf` when on PATH, else
torch.distributed). Without torch or a GPU the verdict is `no-gpu`; it never fails for that.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from typing import Any

KIND = "centrality-benchmark"  # marks our line among whatever else the job printed
THRESHOLDS = {
    "min_tflops": "matmul TFLOP/s",
    "min_membw_gbps": "memory GB/s",
    "min_busbw_gbps": "NCCL bus GB/s",
}
# Passed on for the streams' verdict (it judges against the fleet), not judged here.
PASSED_ON = ("fleet_fraction",)


class WrongResults(RuntimeError):
    """nccl-tests' own check failed: the collective returned wrong data on this node."""


def verdict(
    gpus: list[dict[str, Any]],
    busbw: float | None,
    thresholds: dict[str, float],
    wrong: str | None = None,
    visible: int | None = None,
) -> tuple[str, list[str]]:
    """pass/fail/no-gpu and why, against the thresholds that were given; wrong data fails.

    `visible` is how many GPUs the node has, when the GPU suite did not run (`--suites nccl`)."""
    if not gpus and not visible:
        return "no-gpu", []
    reasons: list[str] = [wrong] if wrong else []
    for g in gpus:
        if g.get("error"):
            reasons.append(f"gpu {g['gpu']}: {g['error']}")
        for key, field in (
            ("min_tflops", "matmul_tflops"),
            ("min_membw_gbps", "memory_bandwidth_gbps"),
        ):
            value = g.get(field)
            if key in thresholds and value is not None and value < thresholds[key]:
                reasons.append(
                    f"gpu {g['gpu']}: {THRESHOLDS[key]} {value:.1f} < {thresholds[key]:g}"
                )
    if (
        "min_busbw_gbps" in thresholds
        and busbw is not None
        and busbw < thresholds["min_busbw_gbps"]
    ):
        reasons.append(
            f"{THRESHOLDS['min_busbw_gbps']} {busbw:.1f} < {thresholds['min_busbw_gbps']:g}"
        )
    return ("fail" if reasons else "pass"), reasons


def _timed(torch: Any, device: int, fn: Any, iters: int) -> float:
    for _ in range(3):
        fn()
    torch.cuda.synchronize(device)
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize(device)
    return (time.perf_counter() - start) / iters


def _matmul_tflops(torch: Any, device: int, size: int, dtype: Any) -> float:
    a = torch.randn(size, size, dtype=dtype, device=device)
    b = torch.randn(size, size, dtype=dtype, device=device)
    return 2 * size**3 / _timed(torch, device, lambda: torch.matmul(a, b), 20) / 1e12


def _copy_gbps(torch: Any, device: int, mib: int) -> float:
    src = torch.empty(mib * 2**20, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    # A copy reads and writes every byte.
    return 2 * mib * 2**20 / _timed(torch, device, lambda: dst.copy_(src), 20) / 1e9


def gpu_figures(torch: Any, device: int, size: int, mem_mib: int) -> dict[str, Any]:
    dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    try:
        return {
            "gpu": device,
            "model": torch.cuda.get_device_name(device),  # NVML's name for the same device
            "dtype": str(dtype).removeprefix("torch."),
            "matmul_tflops": _matmul_tflops(torch, device, size, dtype),
            "memory_bandwidth_gbps": _copy_gbps(torch, device, mem_mib),
        }
    except Exception as exc:  # a GPU that cannot run a GEMM is a finding, not a crash
        return {"gpu": device, "error": f"{type(exc).__name__}: {exc}"[:300]}


def _nccl_tests(ngpus: int, mib: int) -> float | None:
    exe = shutil.which("all_reduce_perf")
    if exe is None:
        return None
    run = subprocess.run(
        [exe, "-b", f"{mib}M", "-e", f"{mib}M", "-g", str(ngpus)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    # A bandwidth measured on wrong results is no measurement: the node fails, not passes.
    bad = re.search(r"Out of bounds values\s*:\s*(\d+)", run.stdout)
    if bad and int(bad.group(1)) > 0:
        raise WrongResults(f"all_reduce_perf: {bad.group(1)} out-of-bounds values (wrong data)")
    run.check_returncode()
    match = re.search(r"Avg bus bandwidth\s*:\s*([0-9.]+)", run.stdout)
    return float(match.group(1)) if match else None


def _allreduce_rank(rank: int, world: int, port: int, mib: int, results: Any) -> None:
    torch = importlib.import_module("torch")
    dist = importlib.import_module("torch.distributed")

    torch.cuda.set_device(rank)
    dist.init_process_group(
        "nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world
    )
    try:
        t = torch.ones(mib * 2**20 // 4, dtype=torch.float32, device=rank)
        per_op = _timed(torch, rank, lambda: dist.all_reduce(t), 20)
        if rank == 0:
            algbw = t.numel() * 4 / per_op / 1e9
            results.put(algbw * 2 * (world - 1) / world)  # nccl-tests' bus bandwidth
    finally:
        dist.destroy_process_group()


def nccl_busbw(torch: Any, ngpus: int, mib: int) -> float | None:
    if ngpus < 2:
        return None
    found = _nccl_tests(ngpus, mib)
    if found is not None:
        return found
    mp = importlib.import_module("torch.multiprocessing")

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    results = mp.get_context("spawn").SimpleQueue()
    mp.spawn(_allreduce_rank, args=(ngpus, port, mib, results), nprocs=ngpus, join=True)
    return float(results.get())


def measure(args: argparse.Namespace) -> dict[str, Any]:
    start = time.monotonic()
    thresholds = {
        k: float(v) for k in (*THRESHOLDS, *PASSED_ON) if (v := getattr(args, k)) is not None
    }
    gpus: list[dict[str, Any]] = []
    busbw: float | None = None
    wrong: str | None = None
    notes: list[str] = []
    torch: Any = None
    count = 0
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        notes.append("torch is not installed")
    if torch is not None and not torch.cuda.is_available():
        notes.append("no CUDA device is visible")
    elif torch is not None:
        count = torch.cuda.device_count()
        if "gpu" in args.suites:
            gpus = [gpu_figures(torch, i, args.matmul_size, args.mem_mib) for i in range(count)]
        if "nccl" in args.suites:
            try:
                busbw = nccl_busbw(torch, count, args.nccl_mib)
            except WrongResults as exc:
                wrong = str(exc)
            except Exception as exc:
                notes.append(f"nccl: {type(exc).__name__}: {exc}"[:300])
    result, reasons = verdict(gpus, busbw, thresholds, wrong, visible=count)
    if result == "pass" and notes:
        result = "error"
    return {
        "kind": KIND,
        "node": args.node,
        "gpus": gpus,
        "nccl_busbw_gbps": busbw,
        "verdict": result,
        "reasons": reasons + notes,
        "thresholds": thresholds,
        "duration_s": round(time.monotonic() - start, 3),
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true", help="print one JSON line (the default too)")
    default_node = os.environ.get("SLURMD_NODENAME") or os.environ.get("CENTRALITY_NODE")
    p.add_argument("--node", default=default_node or socket.gethostname())
    p.add_argument("--suites", type=lambda s: s.split(","), default=["gpu", "nccl"])
    p.add_argument("--min-tflops", type=float, help="fail a GPU below this GEMM TFLOP/s")
    p.add_argument("--min-membw-gbps", type=float, help="fail a GPU below this memory GB/s")
    p.add_argument("--min-busbw-gbps", type=float, help="fail below this all-reduce bus GB/s")
    p.add_argument(
        "--fleet-fraction",
        type=float,
        help="the streams fail a node below this share of its GPU model's fleet median (0.85)",
    )
    p.add_argument("--matmul-size", type=int, default=8192)
    p.add_argument("--mem-mib", type=int, default=1024)
    p.add_argument("--nccl-mib", type=int, default=256)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    print(json.dumps(measure(parse_args(argv))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
