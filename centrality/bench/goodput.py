"""`centrality bench goodput`: a compressed period of a fleet failing as Llama 3 405B's did,
through the three workers twice at once (rules acting, and automation off with a person
answering after the configured delay): ETTR, GPU-hours lost and saved, each rule's precision.

Interruptions are drawn from the Llama 3 table of causes (`collectors/simulate/taxonomy.py`),
scaled to the simulated fleet and period and multiplied (`acceleration`) so that the period
sees `--interruptions` of them: the rate is the paper's, sped up, the mix of causes its own.
The circuit breakers count in wall-clock windows, which a compressed day would trip; they are
opened here (`bench scale` and `bench hostile` measure them). Everything runs in topics and a
database of the run's own, deleted afterwards.

With `--slow-nodes N`, three more fleets meet N slow-node spells (`collectors/simulate/slow.py`)
and nothing else, differing only in the `slow_node` rule's policy: as configured (timing `auto`,
`ask_checkpoint`), draining at once (`timing=now`) and leaving the node (`enabled=false`), each a
scope of its cluster; their GPU-hours lost, slowness included, are set side by side.

Before it is deleted, `centrality whatif` prices the rules-acting fleet's history under no rules
at all (`*.enabled=false`), set beside the difference measured with the person-only fleet; with
`--off RULE`, a third fleet runs with that one rule off, and the what-if of that rule off is set
beside it (`centrality.bench.goodput_whatif`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import Counter
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import typer
from rich.console import Console
from rich.table import Table

import actions.handlers  # noqa: F401  (registers them: the allowlist names them all)
from actions.registry import handler_names
from centrality.bench.cli import bench_app
from centrality.bench.goodput_loop import Fleet, Period
from centrality.bench.goodput_whatif import calibrate, pooled, sunk
from centrality.bench.run import INPUTS, BenchRun, local_stack
from centrality.bench.scale import warm_up
from centrality.bench.scale_watch import LagSampler, worker_lags
from centrality.errors import UserError
from centrality.pipeline import Pipeline
from centrality.stack.stack import Stack
from collectors.simulate.config import SimConfig
from collectors.simulate.model import ClusterModel
from collectors.simulate.taxonomy import LLAMA3_405B
from schemas.runtime.admin import ensure_topics
from schemas.runtime.emitter import Emitter
from schemas.runtime.emitter.settings import EmitterSettings
from streams.analysis.goodput import Ettr, by_cluster, fold, job_time
from streams.analysis.outcomes import outcomes
from streams.analysis.whatif.candidate import CandidateError, candidate
from streams.analysis.whatif.price import PricingSettings
from streams.history.migrations import migrate
from streams.settings import StreamsSettings

AUTO, MANUAL, OFF = "auto", "manual", "off"
HOUR_S = 3600.0
SLOW_RULE = "slow_node"
# The slow-node fleets (clusters), by the world each lives in, and that world's slow_node config
# (a scope of its cluster). Timed is the rule as a user would run it: timing `auto` (the
# cheapest of now, at the next checkpoint, asking for one now, or leaving the node) with a job
# that honours the checkpoint hook.
SLOW_WORLDS: dict[str, dict[str, Any]] = {
    "timed": {"timing": "auto", "ask_checkpoint": True},
    "now": {"timing": "now"},
    "left": {"enabled": False},
}
SLOW_CLUSTERS = {f"slow-{name}": name for name in SLOW_WORLDS}


@dataclass(frozen=True)
class Options:
    nodes: int
    gpus: int
    jobs: int
    hours: float
    interval_s: float
    interruptions: float
    response_s: float
    repair_s: float
    seed: int
    off: str | None = None  # a rule the third fleet runs without
    slow_nodes: int = 0  # slow-node spells the slow-node fleets meet (0: no such fleets)
    restart_s: float = 600.0  # a requeued job's way back there
    ready_timeout_s: float = 180.0

    @property
    def acceleration(self) -> float:
        natural = LLAMA3_405B.expected(self.nodes * self.gpus, self.hours * HOUR_S)
        return self.interruptions / natural

    def node_out_s(self, out_s: float) -> float:
        """How long a node repair or maintenance of `out_s` keeps a simulated node out. Faults
        come `acceleration` times as often as on Llama 3's fleet, as if each simulated node
        stood for that many of its nodes: one repair takes one of them out, not all."""
        return out_s / self.acceleration

    def sim(self, cluster: str) -> SimConfig:
        return SimConfig(
            nodes=self.nodes,
            gpus=self.gpus,
            jobs=self.jobs,
            seed=self.seed,
            cluster=cluster,
            node_prefix=f"{cluster}-",
            interval_s=self.interval_s,
            heartbeat_s=self.interval_s,
            nodes_per_job=(1, max(1, min(4, self.nodes // max(1, self.jobs)))),
            job_duration_s=(4 * HOUR_S, 12 * HOUR_S),
            checkpoint_every_s=1800.0,
            nccl_every_s=3 * self.interval_s,
            taxonomy=LLAMA3_405B.name,
            acceleration=self.acceleration,
            horizon_s=self.hours * HOUR_S,
            repair_s=self.node_out_s(self.repair_s),
            maintenance_s=self.node_out_s(SimConfig().maintenance_s),
            crash_after_s=self.interval_s,
            check_resend_s=self.interval_s,
        )

    def slow_sim(self, cluster: str) -> SimConfig:
        """A slow-node fleet: the same jobs, and slow nodes instead of the table's
        interruptions, so that what its worlds lose apart is their slow_node policy's doing
        (an interruption striking a running job in one world and an idle node in the other
        would weigh more than the policy)."""
        return self.sim(cluster).model_copy(
            update={
                "taxonomy": None,
                "slow_nodes": self.slow_nodes,
                "restart_s": self.restart_s,
            }
        )

    @property
    def clusters(self) -> tuple[str, ...]:
        return (AUTO, MANUAL, OFF, *(SLOW_CLUSTERS if self.slow_nodes else ()))


def rule_config(opts: Options) -> dict[str, Any]:
    """Today's rule config, with the worlds' own scopes over it: the third fleet's rule off
    there alone, each slow-node fleet's slow_node policy."""
    config: dict[str, Any] = StreamsSettings().rule_config
    if opts.off:
        config = _scoped(config, opts.off, [{"match": {"cluster": OFF}, "enabled": False}])
    if opts.slow_nodes:
        scopes = [{"match": {"cluster": c}} | SLOW_WORLDS[w] for c, w in SLOW_CLUSTERS.items()]
        config = _scoped(config, SLOW_RULE, scopes)
    return config


def _scoped(config: dict[str, Any], name: str, scopes: list[dict[str, Any]]) -> dict[str, Any]:
    rule = config.get(name, {})
    return {**config, name: {**rule, "scopes": [*rule.get("scopes", []), *scopes]}}


def worker_env(run: BenchRun, opts: Options) -> dict[str, str]:
    scoped = opts.off or opts.slow_nodes
    off = {"CENTRALITY_STREAMS_RULE_CONFIG": json.dumps(rule_config(opts))} if scoped else {}
    return {
        **run.env(),
        # Automation off on one cluster: there every action is refused (on the others, the
        # warm-up story's included, every one is allowed).
        "CENTRALITY_ACTIONS_ALLOW": json.dumps({MANUAL: [], "*": handler_names()}),
        "CENTRALITY_ACTIONS_FLEET_SIZE": json.dumps(dict.fromkeys(opts.clusters, opts.nodes)),
        "CENTRALITY_ACTIONS_QUARANTINE_MAX_SHARE": "1.0",
        "CENTRALITY_ACTIONS_RESTART_MAX_PER_WINDOW": "1000",
        "CENTRALITY_MEMORY_UNHEALTHY_FILE": str(run.dir / "unhealthy.json"),
        **off,
    }


async def measure(
    run: BenchRun, opts: Options, pipeline: Pipeline, log: Console
) -> tuple[list[Fleet], int]:
    ready_s = await warm_up(run, pipeline, opts.ready_timeout_s)
    log.log(f"workers ready in {ready_s:.1f} s; simulating {opts.hours:g} h twice")
    # Simulated time starts now and runs ahead of the clock: the workers' clock ticks then
    # judge no silence (a tick judges at most as late as the clock), as on a live fleet.
    start = datetime.now(UTC) + timedelta(seconds=60)
    fleets = [
        Fleet(ClusterModel(opts.sim(AUTO), start), automated=True),
        Fleet(ClusterModel(opts.sim(MANUAL), start), automated=False),
    ]
    if opts.off:
        fleets.append(Fleet(ClusterModel(opts.sim(OFF), start), automated=True))
    for cluster in SLOW_CLUSTERS if opts.slow_nodes else ():
        fleets.append(Fleet(ClusterModel(opts.slow_sim(cluster), start), automated=True))
    lags = LagSampler(
        run.kafka,
        worker_lags(run.kafka, run.groups, {w: INPUTS[w] for w in ("streams", "actions")}),
    )
    spool = EmitterSettings(spool_dir=run.dir / "sim-spool")
    try:
        async with Emitter(run.kafka, spool) as emitter:
            period = Period(
                run.kafka,
                fleets,
                emitter,
                lags,
                run.dir / "unhealthy.json",
                response_s=opts.response_s,
                repair_s=opts.node_out_s(opts.repair_s),
            )
            await period.run(opts.hours * HOUR_S, opts.interval_s, pipeline.check)
    finally:
        await lags.close()
    log.log(f"period over after {period.settles} waits for the workers ({period.late} late)")
    return fleets, period.late


def fleet_ettr(fleet: Fleet, end: datetime) -> Ettr:
    """The fleet's job time up to `end`, as `centrality report` judges it from the jobs'
    events, and then slowness: running time on a slow node that the jobs' checkpoints count
    productive did only 1/factor of its work, and the rest of it is lost. No job event tells
    that, the simulation does (`ClusterModel.slow_lost_gpu_s`); slow time an attempt never
    saved is in the events' lost (or open) time already, whole."""
    times = [job_time(job, end) for job in fold(fleet.job_events).values()]
    [(_, e)] = by_cluster(times).items()
    slow = sum(fleet.model.slow_lost_gpu_s.values())
    return replace(e, productive_gpu_s=e.productive_gpu_s - slow, lost_gpu_s=e.lost_gpu_s + slow)


def world(opts: Options, fleet: Fleet, end: datetime) -> dict[str, Any]:
    """One fleet's figures."""
    e = fleet_ettr(fleet, end)
    struck = Counter(f.cause.component for f, _ in fleet.model.struck)
    return {
        "ettr": None if e.ettr is None else round(e.ettr, 4),
        "productive_gpu_h": round(e.productive_gpu_s / HOUR_S, 1),
        "lost_gpu_h": round(e.lost_gpu_s / HOUR_S, 1),
        "open_gpu_h": round(e.open_gpu_s / HOUR_S, 1),
        "out_of_service_gpu_h": round(fleet.node_out_s * opts.gpus / HOUR_S, 1),
        "interruptions": sum(struck.values()),
        "jobs_interrupted": sum(1 for _, job in fleet.model.struck if job),
        "restarts_by_automation": fleet.restarts,
        "restarts_by_a_person": fleet.by_hand,
        "precision": _precision(fleet),
        "restarts": _restarts(fleet, end),
    }


def slow_figures(opts: Options, fleets: list[Fleet], end: datetime) -> dict[str, Any]:
    """The slow-node fleets side by side: each world's figures and what slowness cost it (in
    its `lost_gpu_h`), and what the timed policy saved against draining at once and against
    leaving the node (positive: GPU-hours the other world lost more)."""
    worlds = {
        SLOW_CLUSTERS[f.cluster]: world(opts, f, end)
        | {
            "slow_lost_gpu_h": round(sum(f.model.slow_lost_gpu_s.values()) / HOUR_S, 1),
            "checkpoints_asked": f.checkpoints_asked,
            "jobs_moved": f.moved,
        }
        for f in fleets
    }
    timed = worlds["timed"]
    return {
        "spells": [
            {
                "node": s.node,
                "at_h": round(s.at_s / HOUR_S, 2),
                "hours": round((s.until_s - s.at_s) / HOUR_S, 2),
                "factor": round(s.factor, 2),
            }
            for s in fleets[0].model.spells  # drawn alike in every world
        ],
        "restart_s": opts.restart_s,
        "policies": SLOW_WORLDS,
        **worlds,
        "saved_vs_now_gpu_h": round(_lost(worlds["now"]) - _lost(timed), 1),
        "saved_vs_left_gpu_h": round(_lost(worlds["left"]) - _lost(timed), 1),
    }


def figures(opts: Options, fleets: list[Fleet]) -> dict[str, Any]:
    end = fleets[0].model.start + timedelta(seconds=opts.hours * HOUR_S)
    slow = [f for f in fleets if f.cluster in SLOW_CLUSTERS]
    out = {f.cluster: world(opts, f, end) for f in fleets if f not in slow}
    auto, manual = out[AUTO], out[MANUAL]
    off = out.get(OFF)
    return {
        "nodes": opts.nodes,
        "gpus_per_node": opts.gpus,
        "hours": opts.hours,
        "taxonomy": LLAMA3_405B.source,
        "interruptions_expected": opts.interruptions,
        "acceleration": round(opts.acceleration, 1),
        "by_cause": dict(Counter(f.cause.component for f, _ in fleets[0].model.struck)),
        "response_s": opts.response_s,
        "repair_s": opts.repair_s,
        "node_repair_s": round(opts.node_out_s(opts.repair_s), 1),
        AUTO: auto,
        MANUAL: manual,
        "saved_gpu_h": round(_lost(manual) - _lost(auto), 1),
        **({OFF: off, "off_rule": opts.off, "off_cost_gpu_h": round(_lost(off) - _lost(auto), 1)}
           if off is not None else {}),
        **({"slow_nodes": slow_figures(opts, slow, end)} if slow else {}),
    }  # fmt: skip


def _lost(world: dict[str, Any]) -> float:
    """Job time lost or not decided at the end: what a world gives up."""
    return float(world["lost_gpu_h"] + world["open_gpu_h"])


def calibrations(
    run: BenchRun, opts: Options, result: dict[str, Any], since: datetime, until: datetime
) -> list[dict[str, Any]]:
    """The what-if of each other world's rules over the rules-acting fleet's history, beside the
    difference measured."""
    pricing = PricingSettings(response_s=opts.response_s, repair_s=opts.repair_s)
    worlds = [(["*.enabled=false"], result["saved_gpu_h"])]
    if opts.off:
        worlds.append(([f"{opts.off}.enabled=false"], result["off_cost_gpu_h"]))
    return [
        calibrate(run.clickhouse, since, until, sets, AUTO, measured, pricing)
        for sets, measured in worlds
    ]


def _precision(fleet: Fleet) -> dict[str, dict[str, Any]]:
    """Per rule: its quarantines of nodes that were faulty then (right) or sound (wrong)."""
    right = Counter(rule for rule, _, ok in fleet.quarantines if ok)
    wrong = Counter(rule for rule, _, ok in fleet.quarantines if not ok)
    return {
        rule: {
            "right": right[rule],
            "wrong": wrong[rule],
            "precision": round(right[rule] / (right[rule] + wrong[rule]), 3),
        }
        for rule in sorted(right.keys() | wrong.keys())
    }


def _restarts(fleet: Fleet, end: datetime) -> dict[str, dict[str, int]]:
    """Per rule: its restarts judged as `centrality report` judges them
    (streams/analysis/outcomes.py): held, or failed again within
    `CENTRALITY_REPORT_RESTART_WINDOW_S`."""
    judged = outcomes([*fleet.job_events, *fleet.decisions], fleet.model.start, end, end)
    counts = Counter((r.rule, r.outcome) for r in judged.restarts)
    return {
        rule: {o: n for (r, o), n in sorted(counts.items()) if r == rule}
        for rule in sorted({r for r, _ in counts})
    }


def run_bench(stack: Stack, opts: Options, log: Console) -> dict[str, Any]:
    run = BenchRun(stack, "goodput")
    asyncio.run(ensure_topics(run.kafka))
    migrate(run.clickhouse)
    pipeline = Pipeline(worker_env(run, opts), run.dir / "logs")
    pipeline.start()
    began, began_at = time.monotonic(), datetime.now(UTC)
    ok = False
    try:
        fleets, late = asyncio.run(measure(run, opts, pipeline, log))
        sunk(run.clickhouse)
        pipeline.stop()
        result = figures(opts, fleets)
        end = fleets[0].model.start + timedelta(seconds=opts.hours * HOUR_S)
        log.log("pricing the rules-acting fleet's history with centrality whatif")
        result["whatif"] = calibrations(run, opts, result, began_at, end + timedelta(hours=1))
        ok = True
    finally:
        pipeline.stop()
        with contextlib.suppress(Exception):  # never hide the measurement's own failure
            asyncio.run(run.delete_topics())
            run.discard(keep_logs=not ok)
    result["workers_late"] = late  # waits for them that timed out: their answer came later
    result["wall_s"] = round(time.monotonic() - began, 1)
    return result


def print_result(result: dict[str, Any], console: Console) -> None:
    table = Table(
        "", "ETTR", "lost GPU-h", "not decided GPU-h", "out of service GPU-h",
        "interruptions", "restarted by rules", "by a person",
        title=f"bench goodput: {result['nodes']} nodes x {result['gpus_per_node']} GPUs, "
        f"{result['hours']:g} h, {sum(result['by_cause'].values())} interruptions "
        f"(Llama 3 405B's causes, x{result['acceleration']:g} their rate)",
        caption=f"a person answers after {result['response_s'] / 60:g} min; automation saved "
        f"{result['saved_gpu_h']} GPU-h",
    )  # fmt: skip
    said = {AUTO: "rules act", MANUAL: "a person only", OFF: f"without {result.get('off_rule')}"}
    for name in (n for n in (AUTO, MANUAL, OFF) if n in result):
        r = result[name]
        ettr = "—" if r["ettr"] is None else f"{100 * r['ettr']:.1f} %"
        table.add_row(
            said[name], ettr, str(r["lost_gpu_h"]),
            str(r["open_gpu_h"]), str(r["out_of_service_gpu_h"]), str(r["interruptions"]),
            str(r["restarts_by_automation"]), str(r["restarts_by_a_person"]),
        )  # fmt: skip
    console.print(table)
    rules = Table("rule", "right", "wrong", "precision", title="quarantines (rules acting)")
    for rule, p in result[AUTO]["precision"].items():
        rules.add_row(rule, str(p["right"]), str(p["wrong"]), f"{100 * p['precision']:.0f} %")
    console.print(rules)
    restarts = Table("rule", "outcome", "restarts", title="restarts (rules acting)")
    for rule, judged in result[AUTO]["restarts"].items():
        for outcome, count in judged.items():
            restarts.add_row(rule, outcome, str(count))
    console.print(restarts)
    if "slow_nodes" in result:
        print_slow(result["slow_nodes"], console)
    print_calibrations(result["whatif"], console, "")


def print_slow(slow: dict[str, Any], console: Console) -> None:
    factors = [s["factor"] for s in slow["spells"]] or [0.0]
    table = Table(
        "slow_node", "ETTR", "lost GPU-h", "of which slowness", "not decided GPU-h",
        "out of service GPU-h", "checkpoints asked", "jobs moved",
        title=f"slow nodes: {len(slow['spells'])} spells, steps x{min(factors):.2f} to "
        f"x{max(factors):.2f}, {sum(s['hours'] for s in slow['spells']):.1f} h in all "
        f"(a requeue's way back: {slow['restart_s']:g} s)",
        caption=f"timed saved {slow['saved_vs_now_gpu_h']} GPU-h against draining at once, "
        f"{slow['saved_vs_left_gpu_h']} against leaving the node",
    )  # fmt: skip
    said = {"timed": "as configured (timing auto)", "now": "drain at once (timing=now)",
            "left": "leave it (enabled=false)"}  # fmt: skip
    for name, words in said.items():
        r = slow[name]
        ettr = "—" if r["ettr"] is None else f"{100 * r['ettr']:.1f} %"
        table.add_row(
            words, ettr, str(r["lost_gpu_h"]), str(r["slow_lost_gpu_h"]), str(r["open_gpu_h"]),
            str(r["out_of_service_gpu_h"]), str(r["checkpoints_asked"]), str(r["jobs_moved"]),
        )  # fmt: skip
    console.print(table)


def print_calibrations(calibrations: list[dict[str, Any]], console: Console, over: str) -> None:
    priced = Table("candidate", "what-if GPU-h", "measured GPU-h", "ratio",
                   title="centrality whatif over the rules-acting fleet's history, beside the "
                   f"world it prices{over} (issue 40: same sign, within 25 %)")  # fmt: skip
    for c in calibrations:
        ratio = "—" if c["ratio"] is None else f"{c['ratio']:.2f}"
        priced.add_row(c["candidate"], str(c["gpu_h"]), str(c["measured_gpu_h"]), ratio)
    console.print(priced)


@bench_app.command("goodput")
def bench_goodput(
    nodes: int = typer.Option(32, min=2, help="Nodes of each of the two fleets."),
    gpus: int = typer.Option(8, min=1, help="GPUs per node."),
    jobs: int = typer.Option(0, min=0, help="Jobs at once; 0: one per four nodes."),
    hours: float = typer.Option(
        20.0, min=1, max=23, help="The period simulated (it runs ahead of the clock: < 24 h)."
    ),
    interval_s: float = typer.Option(300.0, min=10, help="Sampling interval (a tick)."),
    interruptions: float = typer.Option(
        40.0, min=1, help="Interruptions expected over the period: sets the acceleration."
    ),
    seed: int = typer.Option(1, help="Seed of both fleets (the same jobs and faults)."),
    off: str | None = typer.Option(
        None,
        "--off",
        help="A rule a third fleet runs without (automation otherwise on), for the what-if of "
        "that rule off to be set beside.",
    ),
    slow_nodes: int = typer.Option(
        0,
        min=0,
        help="Slow-node spells over the period: three more fleets meet them, as the slow_node "
        "rule is configured (timing auto, asking for checkpoints), draining at once and leaving "
        "the node (0: none).",
    ),
    restart_s: float = typer.Option(
        600.0, min=0, help="A requeued job's way back in the slow-node fleets (seconds)."
    ),
    runs: int = typer.Option(
        1,
        min=1,
        help="Runs, of seeds SEED, SEED+1, …: the what-if's calibration summed over them too "
        "(one seed's worlds drift apart by chance).",
    ),
    json: bool = typer.Option(False, "--json", help="Print one JSON line."),
) -> None:
    """ETTR, GPU-hours lost and saved, and each rule's precision, rules acting or not.

    Over a compressed period whose interruptions follow Llama 3 405B's causes: rules acting, and
    automation off with a person answering after CENTRALITY_WHATIF_RESPONSE_S (a node's repair:
    CENTRALITY_WHATIF_REPAIR_S)."""
    _check_off(off)
    pricing = PricingSettings()
    opts = Options(
        nodes=nodes,
        gpus=gpus,
        jobs=jobs or max(1, nodes // 4),
        hours=hours,
        interval_s=interval_s,
        interruptions=interruptions,
        response_s=pricing.response_s,
        repair_s=pricing.repair_s,
        seed=seed,
        off=off,
        slow_nodes=slow_nodes,
        restart_s=restart_s,
    )
    _check_slow_worlds(opts)
    _tell(_run_seeds(opts, runs), json=json)


def _check_off(off: str | None) -> None:
    """`--off` names a rule, before a stack is started for it."""
    if off is None:
        return
    try:
        candidate(StreamsSettings(), sets=[f"{off}.enabled=false"])
    except CandidateError as exc:
        raise UserError(f"--off {off}: {exc}", "name a rule `centrality rules` lists") from None


def _check_slow_worlds(opts: Options) -> None:
    """The slow-node worlds' scopes load as the streams worker would load them."""
    if not opts.slow_nodes:
        return
    try:
        candidate(StreamsSettings().model_copy(update={"rule_config": rule_config(opts)}))
    except CandidateError as exc:
        hint = f"it needs the {SLOW_RULE} rule (`centrality rules`)"
        raise UserError(f"--slow-nodes: {exc}", hint) from None


def _run_seeds(opts: Options, runs: int) -> list[dict[str, Any]]:
    """`runs` runs on the local stack, of seeds `opts.seed`, `opts.seed + 1`, …"""
    stack, log = local_stack()
    return [run_bench(stack, replace(opts, seed=opts.seed + i), log) for i in range(runs)]


def _tell(results: list[dict[str, Any]], *, json: bool) -> None:
    """One run's figures, or several runs' with their what-if calibrations summed, as one JSON
    line or as tables."""
    runs = len(results)
    result = results[0] if runs == 1 else {
        "runs": results,
        "whatif": pooled([r["whatif"] for r in results]),
    }  # fmt: skip
    if json:
        print(orjson.dumps(result).decode())
        return
    console = Console()
    for one in results:
        print_result(one, console)
    if runs > 1:
        print_calibrations(result["whatif"], console, f", summed over {runs} seeds")
