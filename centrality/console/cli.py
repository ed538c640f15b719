"""`centrality console`: the web console, served by this process."""

from __future__ import annotations

import functools

import typer

from centrality.errors import UserError


def register(app: typer.Typer) -> None:
    app.command("console")(console)


def console(
    host: str | None = typer.Option(
        None, "--host", help="Listen here (CENTRALITY_CONSOLE_HOST; default 127.0.0.1)."
    ),
    port: int | None = typer.Option(
        None, "--port", help="On this port (CENTRALITY_CONSOLE_PORT; default 8470)."
    ),
) -> None:
    """The fleet, incidents, jobs, timelines and silences in a browser.

    Operators' commands are signed with your key; without a trusted key it is read-only."""
    from centrality.console.serve import serve
    from centrality.console.settings import ConsoleSettings
    from centrality.runner import run_until_signalled
    from schemas.runtime.settings import KafkaSettings

    settings = ConsoleSettings()
    settings = settings.model_copy(
        update={"host": host or settings.host, "port": settings.port if port is None else port}
    )
    problem = settings.refusal()
    if problem is not None:
        raise UserError(problem, "see docs/operations.md#the-web-console")
    run_until_signalled(functools.partial(serve, settings, KafkaSettings()))
