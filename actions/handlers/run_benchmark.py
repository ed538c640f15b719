"""RunBenchmark → the benchmark runner on exactly those nodes, once drained; one BenchmarkCompleted
per node."""

from __future__ import annotations

from typing import Any

from actions.benchmark.baseline import with_baselines
from actions.benchmark.parse import parse_reports
from actions.breaker import drained_first
from actions.context import ActionContext
from actions.errors import TemporaryError
from actions.registry import handles
from schemas.envelope import utcnow
from schemas.events import BenchmarkCompleted, RunBenchmark


@handles(
    RunBenchmark,
    name="run_benchmark",
    retries=1,
    timeout_s=1800.0,
    guard=drained_first,
    done="Benchmarked {nodes}",
    not_done="{nodes} not benchmarked",
)
def run_benchmark(trigger: RunBenchmark, ctx: ActionContext) -> dict[str, Any]:
    p = trigger.payload
    command = [
        *ctx.settings.benchmark_command,
        "--suites",
        ",".join(p.suites),
        *ctx.settings.benchmark_args,
    ]
    run = ctx.adapter.run_on_nodes(
        p.nodes, command, env={}, timeout_s=ctx.settings.benchmark_timeout_s
    )
    done: dict[str, Any] = {
        "nodes": list(p.nodes),
        "job_id": run.job_id,
        "exit_code": run.exit_code,
    }
    if ctx.dry_run:
        return done
    reports = parse_reports(run.stdout, p.nodes, trigger.event_id)
    if run.exit_code != 0 and all(r.verdict == "error" for r in reports):
        raise TemporaryError(f"benchmark exited {run.exit_code}: {run.stderr[-300:]}")
    window_s = ctx.settings.benchmark_fleet_window_s
    reports = with_baselines(reports, ctx.baselines, trigger.cluster, window_s)
    for report in reports:
        ctx.emit(
            BenchmarkCompleted(
                source=ctx.settings.source,
                cluster=trigger.cluster,
                subject=report.node,
                occurred_at=utcnow(),
                payload=report,
            )
        )
    done["benchmarks"] = [r.model_dump(mode="json", exclude={"trigger_id"}) for r in reports]
    done["verdicts"] = {r.node: r.verdict for r in reports}
    return done
