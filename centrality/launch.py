"""The `centrality` command's entry point, kept apart from the CLI it loads.

A process that multiprocessing spawns (the history sink's insert processes, replay's parts) first
re-runs the script of the command that started it, as `__mp_main__`: what that script imports at
its top, each such process imports too, and holds for its life. Here that is this module alone,
not the CLI with every command's imports (~10 MB resident in each insert process).
"""

from __future__ import annotations


def main() -> None:
    from centrality.cli import main as cli

    cli()
