"""The `centrality bench` command group; each benchmark registers itself on `bench_app`."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping

import orjson
import typer
from rich.console import Console
from rich.table import Table

from centrality.progress import tracking, wanted

bench_app = typer.Typer(
    help="Benchmarks; each prints a rich table, or one JSON line with --json.", no_args_is_help=True
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
)


@bench_app.callback()
def _progress(ctx: typer.Context) -> None:
    # Each benchmark's `--json` is its own option, parsed after this: a spinner is drawn only
    # when stdout, where that JSON goes, is a person's terminal too.
    progress = ctx.with_resource(tracking(wanted() and sys.stdout.isatty()))
    progress.phase(f"bench {ctx.invoked_subcommand}")


def register(app: typer.Typer) -> None:
    try:
        for module in BENCH_MODULES:
            importlib.import_module(module)
    except ModuleNotFoundError as exc:
        # A producer's install (no extras) still gets a working `centrality`; the benchmarks
        # drive the whole stack, so they say what to install instead.
        app.command("bench", help="Benchmarks (needs the workers and local extras).")(
            _needs_extras(exc)
        )
        return
    app.add_typer(bench_app, name="bench")


def _needs_extras(exc: ModuleNotFoundError) -> Callable[[], None]:
    def bench() -> None:
        Console(stderr=True).print(
            f"`centrality bench` needs {exc.name!r}: pip install 'centrality[workers,local]'",
            markup=False,
        )
        raise typer.Exit(2)

    return bench


def report(title: str, result: Mapping[str, object], *, json: bool) -> None:
    """One JSON line for machines, or a one-row rich table for people."""
    if json:
        print(orjson.dumps(result).decode())
        return
    table = Table(*result, title=title)
    table.add_row(*(str(v) for v in result.values()))
    Console().print(table)
