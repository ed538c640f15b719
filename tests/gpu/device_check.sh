#!/usr/bin/env bash
# The GPU paths on a machine with real GPUs (CI has none): the node agent on real NVML for a
# minute while the GPUs are loaded, its CPU and memory meanwhile, and the benchmark runner.
# Figures go to BENCHMARKS.md ("On real GPUs"). Wheels the machine lacks travel in .whl/.
set -u
OUT=${OUT:-/tmp/gpu-check}
mkdir -p "$OUT"
if compgen -G '.whl/*.whl' >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD PYTHONUNBUFFERED=1
nvidia-smi -q >"$OUT/nvidia-smi-q.txt" 2>&1
python3 -c 'import torch; print(torch.__version__, torch.cuda.get_device_name(0))'

# The agent's CPU and RSS (its own process, dry run) beside the recording agent.
python3 -c "
from centrality.bench.agent import bench_agent
bench_agent(backend='nvml', duration_s=60, warmup_s=5, gpus=0, interval_s=1.0, dry_run=True, json=True)
" >"$OUT/bench_agent.json" 2>"$OUT/bench_agent.err" &
bench=$!
python3 tests/gpu/record_nvml.py --duration-s 65 --out "$OUT/nvml_record.json" -- sh -c \
  "python3 tests/gpu/busy.py 20 && python3 -m actions.benchmark.runner --json >'$OUT/runner_under_agent.json'" \
  2>"$OUT/record.err"
echo "record exit $?"
wait $bench; echo "bench agent exit $?"; cat "$OUT/bench_agent.json"

run() { echo "runner $*"; python3 -m actions.benchmark.runner --json "$@"; }
{
  run
  run --min-tflops 600 --min-membw-gbps 3000
  run --min-tflops 2000
  run --matmul-size 16384 --mem-mib 4096
  run --suites nccl
} >"$OUT/runner.jsonl" 2>"$OUT/runner.err"
cat "$OUT/runner.jsonl"
tail -5 "$OUT/record.err" "$OUT/runner.err" "$OUT/bench_agent.err"
