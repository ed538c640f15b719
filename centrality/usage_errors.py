"""A user's mistake on the command line or in the environment: one line, exit 2."""

from __future__ import annotations

import typer
from pydantic import ValidationError
from pydantic_settings import BaseSettings

from centrality.errors import USAGE, Failure, explains, one_line
from schemas.signing import MissingKeyError


@explains(typer.TyperException)
def _command_line(exc: typer.TyperException) -> Failure | None:
    """Click's usage errors (a bad or missing option, an invalid value)."""
    message = one_line(exc.format_message()).rstrip(".")  # a fix follows it, after a `;`
    ctx = getattr(exc, "ctx", None)
    if ctx is None:
        return Failure(exc.exit_code, message)
    if not message:  # `no_args_is_help`: the help is what it says, and is already printed
        return Failure(exc.exit_code, f"`{ctx.command_path}` needs a command (listed above)")
    return Failure(exc.exit_code, message, f"see `{ctx.command_path} --help`")


@explains(ValidationError)
def _invalid(exc: ValidationError) -> Failure:
    settings = _settings_class(exc.title)
    problems = []
    for error in exc.errors():
        if error["type"] == "default_factory_not_called":
            continue  # a default that follows a field already said to be wrong (a port offset)
        field = ".".join(str(part) for part in error["loc"])
        where = _env_var(settings, field) if settings else field
        shown = f"{where}={error['input']!r}" if settings and error["type"] != "missing" else where
        problems.append(f"{shown}: {error['msg']}")
    fix = (
        "fix that environment variable (`centrality config` shows them all)"
        if settings
        else ("fix the value (see the command's --help)")
    )
    return Failure(USAGE, one_line("; ".join(problems), 240), fix)


def _settings_class(name: str) -> type[BaseSettings] | None:
    todo: list[type[BaseSettings]] = [BaseSettings]
    while todo:
        cls = todo.pop()
        if cls.__name__ == name:
            return cls
        todo.extend(cls.__subclasses__())
    return None


def _env_var(settings: type[BaseSettings], field: str) -> str:
    prefix = str(settings.model_config.get("env_prefix", ""))
    return f"{prefix}{field.split('.')[0]}".upper()


@explains(MissingKeyError)
def _no_key(exc: MissingKeyError) -> Failure:
    return Failure(USAGE, str(exc))  # it already says how to set one


@explains(FileNotFoundError)
def _no_file(exc: FileNotFoundError) -> Failure:
    return Failure(USAGE, f"no such file: {exc.filename}", "check the path")


@explains(PermissionError)
def _not_allowed(exc: PermissionError) -> Failure:
    return Failure(USAGE, f"not allowed to open {exc.filename}", "check its permissions")
