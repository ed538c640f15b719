"""ResetGpus → on each drained node, a job runs the GPU reset (`actions.remediation.gpu_reset`:
`nvidia-smi -r -i N` on each GPU no process uses). A GPU busy or not reset fails the rung, and
the ladder climbs on."""

from __future__ import annotations

from typing import Any

from actions.breaker import RESET, all_of, drained_first, remediation_share, rung_budget
from actions.context import ActionContext
from actions.errors import PermanentError
from actions.registry import handles
from actions.remediation import gpu_reset
from actions.remediation.reports import reports_of
from schemas.events import ResetGpus


@handles(
    ResetGpus,
    name=RESET,
    retries=0,  # a reset that failed is the ladder's to climb past, not to repeat
    timeout_s=600.0,
    guard=all_of(
        drained_first,
        rung_budget(RESET, "reset", "reset_max_per_window", "reset_window_s"),
        remediation_share,
    ),
    done="GPUs of {nodes} reset",
    not_done="GPUs of {nodes} not reset",
)
def reset_gpus(trigger: ResetGpus, ctx: ActionContext) -> dict[str, Any]:
    p = trigger.payload
    command = [*ctx.settings.gpu_reset_command, "--gpus", ",".join(map(str, p.gpus))]
    run = ctx.adapter.run_on_nodes(
        p.nodes, command, env={}, timeout_s=ctx.settings.gpu_reset_timeout_s
    )
    done: dict[str, Any] = {"nodes": list(p.nodes), "job_id": run.job_id, "gpus": list(p.gpus)}
    if ctx.dry_run:
        return done
    reports = reports_of(run.stdout, gpu_reset.KIND)
    problems = []
    for node in p.nodes:
        report = reports.get(node)
        if report is None:
            problems.append(f"{node}: no reset report (exit {run.exit_code}) {run.stderr[-200:]}")
            continue
        if report.get("error"):
            problems.append(f"{node}: {report['error']}")
        for gpu in report.get("gpus", []):
            if not gpu.get("reset"):
                pids = f" (pids {gpu['pids']})" if gpu.get("pids") else ""
                problems.append(f"{node} GPU {gpu.get('gpu')}: {gpu.get('error')}{pids}")
    if problems:
        raise PermanentError("; ".join(problems)[:1000])
    return done | {"reset": {node: reports[node]["gpus"] for node in p.nodes}}
