"""The `centrality bench` command group; each benchmark registers itself on `bench_app`."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from typing import Any

import orjson
import typer
from rich.console import Console
from rich.table import Table
from typer.core import TyperGroup
from typer.main import get_command_from_info

from centrality.entry import readable_help
from centrality.progress import tracking, wanted


class LazyBenchGroup(TyperGroup):
    """The benchmarks import most of the project: their modules are imported (and their
    commands made) only when `centrality bench …` is asked for, so every other command starts
    without them."""

    _loaded = False

    def _load(self) -> None:
        if self._loaded:
            return
        try:
            for module in BENCH_MODULES:
                importlib.import_module(module)  # each registers its command on bench_app
        except ModuleNotFoundError as exc:
            # A producer's install (no extras) still gets a working `centrality`; the
            # benchmarks drive the whole stack, so they say what to install instead.
            Console(stderr=True).print(
                f"`centrality bench` needs {exc.name!r}: pip install 'centrality[workers,local]'",
                markup=False,
            )
            raise typer.Exit(2) from None
        for info in bench_app.registered_commands:
            command = get_command_from_info(
                info, pretty_exceptions_short=True, rich_markup_mode="rich"
            )
            readable_help(command)
            self.add_command(command, command.name)
        self._loaded = True

    # Typer brings its own copy of click: its context and command types, not click's.
    def list_commands(self, ctx: Any) -> list[str]:
        self._load()
        return super().list_commands(ctx)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        self._load()
        return super().get_command(ctx, cmd_name)


bench_app = typer.Typer(
    help="Benchmarks; each prints a rich table, or one JSON line with --json.",
    no_args_is_help=True,
    cls=LazyBenchGroup,
)

# One module per benchmark, each decorating a function with `@bench_app.command("<name>")`.
BENCH_MODULES: tuple[str, ...] = (
    "centrality.bench.codec",
    "centrality.bench.sink",
    "centrality.bench.replay",
    "centrality.bench.agent",
    "centrality.bench.streams",
    "centrality.bench.hostile",
    "centrality.bench.scale",
    "centrality.bench.goodput",
    "centrality.bench.console",
    "centrality.bench.incidents",
)


@bench_app.callback()
def _progress(ctx: typer.Context) -> None:
    # Each benchmark's `--json` is its own option, parsed after this: a spinner is drawn only
    # when stdout, where that JSON goes, is a person's terminal too.
    progress = ctx.with_resource(tracking(wanted() and sys.stdout.isatty()))
    progress.phase(f"bench {ctx.invoked_subcommand}")


def register(app: typer.Typer) -> None:
    app.add_typer(bench_app, name="bench")


def report(title: str, result: Mapping[str, object], *, json: bool) -> None:
    """One JSON line for machines, or a rich table for people: a row a figure, so that it stays
    whole in a terminal or a pipe of 80 columns however many figures there are."""
    if json:
        print(orjson.dumps(result).decode())
        return
    table = Table("figure", "value", title=title)
    for name, value in result.items():
        table.add_row(name, "-" if value is None else str(value))
    Console().print(table)
