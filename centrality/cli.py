"""The `centrality` command."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import os
import sys

import orjson
import typer
from rich.console import Console
from rich.table import Table

from centrality.entry import CentralityGroup, Options, quiet_libraries
from centrality.errors import UserError
from centrality.progress import tracking, wanted
from centrality.runner import run_until_signalled
from centrality.version import version
from schemas.runtime import tracing
from schemas.runtime.logs import configure_logging

app = typer.Typer(
    help="Centrality: an event-sourced control plane for GPU training clusters.",
    no_args_is_help=True,
    add_completion=False,
    cls=CentralityGroup,
)
console = Console(stderr=True)


def _print_version(asked: bool) -> None:
    if asked:
        print(f"centrality {version()}")
        raise typer.Exit()


@app.callback()
def _logging(
    ctx: typer.Context,
    debug: bool = typer.Option(False, "--debug", help="Show the traceback of an error."),
    _version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version."
    ),
) -> None:
    Options.debug = debug
    # Logs go to stderr (JSON unless a person is watching): stdout is for `--json` output.
    configure_logging()
    quiet_libraries(ctx.invoked_subcommand)
    # Off unless OTEL_* says otherwise; `centrality streams` execs Faust, which does its own.
    try:
        tracing.configure(f"centrality-{ctx.invoked_subcommand}")
    except ValueError as exc:  # an exporter or protocol we cannot honour: say so, never run blind
        raise UserError(str(exc), "see docs/tracing.md for the OTEL_* settings") from None


@app.command()
def up(
    json: bool = typer.Option(False, "--json", help="Print the result as one JSON line."),
) -> None:
    """Start the local stack (Kafka, ClickHouse), create topics and apply migrations."""
    from centrality.stack.stack import Stack
    from schemas.operators import OperatorSettings, ensure_local_operator
    from schemas.signing import SigningSettings, ensure_key_file

    stack = Stack()
    with tracking(wanted(json)) as progress:

        def step(message: str) -> None:
            progress.log(message)
            progress.phase(message)

        report = stack.up(progress=step)
    # The local stack's trigger signing key, shared by the streams and action workers, and a
    # local operator the workers trust (on any cluster), so commands work out of the box.
    ensure_key_file(SigningSettings().key_file)
    ensure_local_operator(OperatorSettings())
    if json:
        print(
            orjson.dumps(
                {
                    "catalog": dataclasses.asdict(report.catalog),
                    "migrations_applied": report.migrations_applied,
                }
            ).decode()
        )
        return
    for name, problems in report.catalog.drift.items():
        console.print(f"[yellow]topic drift[/] {name}: {'; '.join(problems)} (left unchanged)")
    console.print(
        f"[green]ready[/]: {len(report.catalog.created)} topics created, "
        f"migrations applied: {report.migrations_applied or 'none pending'}"
    )
    _print_status(stack)


@app.command()
def down() -> None:
    """Stop the local stack (data is kept in the state dir)."""
    from centrality.stack.stack import Stack

    Stack().down(progress=lambda msg: console.log(msg))


@app.command()
def status(json: bool = typer.Option(False, "--json", help="Print one JSON line.")) -> None:
    """Show whether Kafka and ClickHouse are running and where."""
    from centrality.stack.stack import Stack

    stack = Stack()
    if json:
        print(orjson.dumps([dataclasses.asdict(s) for s in stack.status()]).decode())
        return
    _print_status(stack)


def _print_status(stack: object) -> None:
    from centrality.stack.stack import Stack

    assert isinstance(stack, Stack)
    table = Table("service", "address", "managed", "running", "pid")
    for s in stack.status():
        table.add_row(
            s.name,
            s.address,
            "local" if s.managed else "external",
            "[green]yes[/]" if s.running else "[red]no[/]",
            str(s.pid or "-"),
        )
    Console().print(table)


@app.command()
def streams() -> None:
    """Run the Faust streams worker (tables, rules, triggers).

    It stops within `CENTRALITY_STREAMS_STOP_TIMEOUT_S` of SIGTERM or Ctrl-C, whatever it is
    doing."""
    from schemas.runtime.admin import catalog_names, require_topics
    from schemas.runtime.settings import KafkaSettings
    from schemas.signing import SigningSettings
    from streams.faust.topics import (
        NotCopartitionedError,
        check_copartitioned,
        ensure_internal_topics,
    )
    from streams.rules.registry import RuleEngine
    from streams.settings import StreamsSettings

    SigningSettings().require("the streams worker")
    settings = StreamsSettings()
    # The worker would refuse the same rules with a traceback in its log: one line here instead.
    RuleEngine.load(settings.rule_modules, settings.rule_config)
    kafka = KafkaSettings()
    asyncio.run(require_topics(kafka, catalog_names(kafka)))  # before any topic of its own
    asyncio.run(ensure_internal_topics(kafka, StreamsSettings()))
    try:
        asyncio.run(check_copartitioned(KafkaSettings(), StreamsSettings()))
    except NotCopartitionedError as exc:
        console.print(f"[red]{exc}[/]", soft_wrap=True)
        raise typer.Exit(2) from None
    # --quiet: no banner on stdout; the worker's lines (level: CENTRALITY_LOG_LEVEL) go to stderr.
    argv = [sys.executable, "-m", "streams", "--quiet", "worker", "--without-web"]
    # The supervisor alone stays beside the worker (centrality.supervise): this process, with
    # all it loaded, is replaced by it (same pid, signals and output).
    timeout_s = str(StreamsSettings().stop_timeout_s)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, "-m", "centrality.supervise", timeout_s, *argv])


@app.command()
def actions() -> None:
    """Run the action worker (triggers → scheduler adapters → action results)."""
    from actions.worker import ActionWorker
    from schemas.runtime.admin import catalog_names
    from schemas.signing import SigningSettings
    from streams.history.baseline import FleetBaselines
    from streams.history.settings import ClickHouseSettings

    # Without the signing key it refuses (exit 2) before serving or reading anything.
    SigningSettings().require("the action worker")
    worker = ActionWorker(baselines=FleetBaselines(ClickHouseSettings()))
    kafka = worker.kafka
    run_until_signalled(worker.run, worker="actions", kafka=kafka, topics=catalog_names(kafka))


@app.command()
def sink() -> None:
    """Run the history sink (every topic → ClickHouse)."""
    from streams.history.sink import HistorySink

    sink = HistorySink()
    run_until_signalled(sink.run, worker="sink", kafka=sink.kafka, topics=sink.topics())


@app.command()
def demo(
    timeout_s: float = typer.Option(240.0, help="How long to wait for the chain."),
    keep: bool = typer.Option(
        False, help="Keep the demo's own topics and database (named at the end) to look at."
    ),
) -> None:
    """A small cluster's bad day through the real workers, narrated from ClickHouse.

    It runs in topics and a database of its own, never the user's history."""
    from centrality.demo import run_demo

    configure_logging(json=False, level="WARNING")
    run_demo(Console(), timeout_s=timeout_s, keep=keep)


# Each area adds its commands from its own module: `register(app)` is called once at import.
COMMAND_MODULES: tuple[str, ...] = (
    "centrality.bench.cli",
    "centrality.history_cli",
    "centrality.collectors_cli",
    "centrality.contract_cli",
    "centrality.config_cli",
    "centrality.doctor_cli",
    "centrality.fleet_cli",
    "centrality.incidents_cli",
    "centrality.command_cli",
    "centrality.operator_cli",
    "centrality.silence_cli",
    "centrality.spool_cli",
    "centrality.rules_cli",
    "centrality.shadow_cli",
    "centrality.report_cli",
    "centrality.whatif_cli",
    "centrality.console.cli",
)

for _module in COMMAND_MODULES:
    importlib.import_module(_module).register(app)

# `--help` lists the commands by what people do with them; the names stay as they are.
HELP_PANELS: dict[str, tuple[str, ...]] = {
    "Operate: the fleet now, and steering it": (
        "nodes", "jobs", "node", "job", "incidents", "incident", "quarantine", "release",
        "benchmark", "requeue", "cancel", "silence", "console",
    ),
    "Inspect: history, decisions and their price": (
        "history", "replay", "report", "whatif", "shadow", "rules", "deadletters", "doctor",
        "config", "status",
    ),
    "Run: the local stack, the workers and collectors": (
        "up", "down", "streams", "actions", "sink", "agent", "tail", "checkpoints", "watch",
        "spool",
    ),
    "Develop: events, simulations and benchmarks": (
        "demo", "simulate", "emit", "nccl", "schemas", "operator", "bench",
    ),
}  # fmt: skip


def _panels() -> None:
    """Each command in its panel, panels in HELP_PANELS' order (rich lists a panel where its
    first command comes)."""
    panel_of = {name: panel for panel, names in HELP_PANELS.items() for name in names}
    order = {panel: i for i, panel in enumerate(HELP_PANELS)}
    for command in app.registered_commands:
        name = command.name or (command.callback.__name__ if command.callback else "")
        command.rich_help_panel = panel_of.get(name, command.rich_help_panel)
    for group in app.registered_groups:
        group.rich_help_panel = panel_of.get(group.name or "", group.rich_help_panel)
    app.registered_commands.sort(key=lambda c: order.get(c.rich_help_panel or "", len(order)))
    app.registered_groups.sort(key=lambda g: order.get(g.rich_help_panel or "", len(order)))


_panels()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
