"""Run the node agent on this machine's real GPUs (NVML) and write what it sent as JSON.

Not a test: the device check (`tests/gpu/device_check.sh`) runs it on a GPU machine; CI has none,
so the agent's NVML path is otherwise tested with a fake `pynvml`. While the agent samples, a
load (`--load-s`) keeps the GPUs busy for a while, so the samples must show it: utilization,
power and SM clock rise under load and fall back after it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import pynvml

from collectors.agent.agent import NodeAgent
from collectors.agent.settings import AgentSettings
from collectors.gpu.nvml import NvmlBackend
from collectors.sink import RecordingSink
from schemas.events import GpuSampled


def driver_facts() -> dict[str, Any]:
    pynvml.nvmlInit()
    try:
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        return {
            "driver": pynvml.nvmlSystemGetDriverVersion(),
            "nvml": pynvml.nvmlSystemGetNVMLVersion(),
            "cuda_driver": pynvml.nvmlSystemGetCudaDriverVersion_v2(),
            "name": pynvml.nvmlDeviceGetName(h),
            "gpus": pynvml.nvmlDeviceGetCount(),
        }
    finally:
        pynvml.nvmlShutdown()


async def record(duration_s: float, interval_s: float, load: list[str]) -> dict[str, Any]:
    settings = AgentSettings(interval_s=interval_s, heartbeat_interval_s=10.0, backend="nvml")
    sink = RecordingSink(keep=True)
    agent = NodeAgent(settings, NvmlBackend(), sink)
    stop = asyncio.Event()
    task = asyncio.create_task(agent.run(stop))
    started = time.monotonic()
    await asyncio.sleep(min(10.0, duration_s / 4))
    loader = await asyncio.create_subprocess_exec(*load) if load else None
    load_at = time.monotonic() - started
    if loader is not None:
        await loader.wait()
    load_end = time.monotonic() - started
    await asyncio.sleep(max(0.0, duration_s - (time.monotonic() - started)))
    stop.set()
    await task
    samples = [
        {
            "t_s": round((e.occurred_at - sink.events[0].occurred_at).total_seconds(), 2),
            **e.payload.model_dump(mode="json"),
        }
        for e in sink.of_type(GpuSampled)
    ]
    return {
        "duration_s": duration_s,
        "interval_s": interval_s,
        "load": {
            "argv": load,
            "from_s": round(load_at, 1),
            "to_s": round(load_end, 1),
            "exit": loader.returncode if loader else None,
        },
        "gpus": agent.gpus,
        "messages": sink.messages,
        "by_type": dict(sink.by_type),
        "samples": samples,
        "others": [e.model_dump(mode="json") for e in sink.events if not isinstance(e, GpuSampled)],
    }


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--duration-s", type=float, default=60.0)
    p.add_argument("--interval-s", type=float, default=1.0)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("load", nargs="*", help="a command that loads the GPUs meanwhile")
    args = p.parse_args()
    found = {
        "facts": driver_facts(),
        **asyncio.run(record(args.duration_s, args.interval_s, args.load)),
    }
    args.out.write_text(json.dumps(found, indent=1))
    busy = [s for s in found["samples"] if (s["utilization_pct"] or 0) > 50]
    print(
        json.dumps(
            {
                "gpus": found["gpus"],
                "by_type": found["by_type"],
                "samples_busy": len(busy),
                "samples": len(found["samples"]),
            }
        )
    )
    return 0 if found["samples"] and busy else 1


if __name__ == "__main__":
    sys.exit(main())
