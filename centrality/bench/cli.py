"""The `centrality bench` command group; each benchmark registers itself on `bench_app`."""

from __future__ import annotations

import importlib

import typer

bench_app = typer.Typer(
    help="Benchmarks; each prints a rich table, or one JSON line with --json.", no_args_is_help=True
)

# One module per benchmark, each decorating a function with `@bench_app.command("<name>")`.
BENCH_MODULES: tuple[str, ...] = (
    "centrality.bench.sink",
    "centrality.bench.replay",
    "centrality.bench.agent",
    "centrality.bench.streams",
)


def register(app: typer.Typer) -> None:
    for module in BENCH_MODULES:
        importlib.import_module(module)
    app.add_typer(bench_app, name="bench")
