"""A stand-in for the benchmark runner on nodes without GPUs: it prints the report a healthy
H100 node gives (`actions.adapters.memory.simulated_report`), or a failing one for a node the
test marked unhealthy (`$FAKE_BENCHMARK_DIR/unhealthy-<node>` holds why). The real runner's
verdict on a node without GPUs is `no-gpu`, which would fail every validation."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from actions.adapters.memory import simulated_report


def main() -> int:
    node = os.environ.get("SLURMD_NODENAME") or os.environ.get("CENTRALITY_NODE") or "-"
    marked = Path(os.environ["FAKE_BENCHMARK_DIR"]) / f"unhealthy-{node}"
    problem = marked.read_text().strip() if marked.exists() else None
    print(json.dumps(simulated_report(node, problem)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
