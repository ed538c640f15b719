"""`centrality operator keygen|trust|whoami`: operators' key pairs, and whom workers trust."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import orjson
import typer
from rich.console import Console

from centrality.contract_cli import signing_operator
from centrality.errors import UserError
from schemas.operators import Operator, OperatorKey, OperatorSettings, trust

operator_app = typer.Typer(
    help="Operators' keys: who signs commands and silences, and whom the workers trust.",
    no_args_is_help=True,
)
err = Console(stderr=True)
CLUSTERS = typer.Option(
    None, "--cluster", help="A cluster the operator may command (repeat; none given: any)."
)


def register(app: typer.Typer) -> None:
    app.add_typer(operator_app, name="operator")


@operator_app.command("keygen")
def keygen(
    name: Annotated[str, typer.Argument(help="The operator's name (who commands appear from).")],
    out: Annotated[
        Path | None, typer.Option("--out", help="Key file (default CENTRALITY_OPERATOR_KEY_FILE).")
    ] = None,
    clusters: list[str] | None = CLUSTERS,
) -> None:
    """Write a new Ed25519 key file (0600) and print the entry the workers must trust."""
    path = (out or OperatorSettings().operator_key_file).expanduser()
    if path.exists():
        raise UserError(f"{path} exists", "give another --out, or remove it if it is unused")
    key = OperatorKey.generate(name)
    key.save(path)
    entry = {name: Operator(public_key=key.public_key, clusters=tuple(clusters or ("*",)))}
    err.print(f"wrote {path}; the workers trust it once CENTRALITY_OPERATORS holds:")
    print(orjson.dumps({n: o.model_dump(mode="json") for n, o in entry.items()}).decode())


@operator_app.command("trust")
def trust_cmd(
    name: Annotated[str, typer.Argument(help="The operator's name.")],
    public_key: Annotated[str, typer.Option("--public-key", help="Base64, from keygen.")],
    clusters: list[str] | None = CLUSTERS,
) -> None:
    """Add an operator to the operators file the workers read (CENTRALITY_OPERATORS_FILE)."""
    settings = OperatorSettings()
    try:
        operator = Operator(public_key=public_key, clusters=tuple(clusters or ("*",)))
    except ValueError as exc:
        raise UserError(f"invalid public key: {exc}", "copy it from `operator keygen`") from None
    trust(settings.operators_file, name, operator)
    print(f"{name} trusted in {settings.operators_file.expanduser()} (restart the workers)")


@operator_app.command("whoami")
def whoami() -> None:
    """Who this CLI signs as, and whether the workers' configuration here trusts that key."""
    key = signing_operator()
    trusted = OperatorSettings().trusted().get(key.name)
    known = trusted is not None and trusted.public_key == key.public_key
    where = f"clusters {', '.join(trusted.clusters)}" if known and trusted else "not trusted here"
    print(f"{key.name} ({where})")
