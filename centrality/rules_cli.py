"""`centrality rules`: every rule the streams worker loads with these settings, as it loads them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

if TYPE_CHECKING:
    from streams.rules.registry import BoundRule

JSON = typer.Option(False, "--json", help="One JSON document instead of a table.")
_MODE = {"live": "[green]live[/]", "shadow": "[yellow]shadow[/]", "off": "[dim]off[/]"}


def rules(json: bool = JSON) -> None:
    """Every rule of the loaded modules: its events, mode, debounce, config and scopes.

    The modules are the built-ins and CENTRALITY_RULES. For each rule: its module, the
    events it reacts to, its mode (live, shadow, or off), its debounce (how many evaluations in a
    row, or how long, its condition must hold before it decides), its config
    (CENTRALITY_STREAMS_RULE_CONFIG over its defaults) and its scopes (node groups and job
    classes: what each selects, what it sets, its mode there, and how many of the nodes the
    streams app knows it selects: a node-group scope selecting none is marked). A rule set the
    worker would refuse is the same one-line error here."""
    from centrality.scope_nodes import read_known_nodes
    from streams.rules.registry import RuleEngine
    from streams.settings import StreamsSettings

    settings = StreamsSettings()
    engine = RuleEngine.load(settings.rule_modules, settings.rule_config)
    loaded = sorted([*engine.rules, *engine.off], key=lambda b: (b.spec.module, b.spec.name))
    known = read_known_nodes()
    if known.facts is None:
        Console(stderr=True).print(
            escape(f"fleet not read, scopes' nodes not counted: {known.unread}"), soft_wrap=True
        )
    counts = {b.spec.name: known.counts(b) for b in loaded}
    rows = [_row(b, counts[b.spec.name]) for b in loaded]
    if json:
        print(orjson.dumps(rows).decode())
        return
    Console().print(_table(rows, loaded, counts))


def _row(b: BoundRule, counts: list[int | None]) -> dict[str, Any]:
    """A rule as `--json` lists it; `counts`: the known nodes each of its scopes selects."""
    from streams.settings import BUILTIN_RULES

    return {
        "rule": b.spec.name,
        "module": b.spec.module,
        "builtin": b.spec.module in BUILTIN_RULES,
        "events": [cls.__name__ for cls in b.spec.on],
        "mode": b.config.mode if b.config.enabled else "off",
        "keep_signals": b.spec.keep_signals,
        "debounce": {"for_s": b.config.for_s, "for_count": b.config.for_count},
        "config": b.config.model_dump(mode="json"),
        "scopes": [
            {
                "match": s.match.model_dump(mode="json", exclude_defaults=True),
                "set": dict(s.overrides),
                "mode": s.config.mode if s.config.enabled else "off",
                "nodes": count,
            }
            for s, count in zip(b.scopes, counts, strict=True)
        ],
    }


def _table(
    rows: list[dict[str, Any]], loaded: list[BoundRule], counts: dict[str, list[int | None]]
) -> Table:
    """The rules as the table shows them, a scope a line with the known nodes it selects."""
    table = Table(
        "rule", "module", "events", "mode", "debounce", "config (set)", "scopes", title="rules"
    )
    for row, bound in zip(rows, loaded, strict=True):
        table.add_row(
            row["rule"],
            row["module"],
            ", ".join(row["events"]),
            _MODE[row["mode"]],
            debounce(bound.config),
            _set(bound.config),
            "\n".join(
                escape(f"{s.match.said()}: {orjson.dumps(s.overrides).decode()}") + _nodes(count)
                for s, count in zip(bound.scopes, counts[bound.spec.name], strict=True)
            ),
        )
    return table


def _nodes(count: int | None) -> str:
    if count is None:
        return ""
    if count == 0:
        return " [red]· no known node[/]"
    return f" [dim]· {count} node{'s' if count != 1 else ''}[/]"


def debounce(config: Any) -> str:
    """How long, or how many times in a row, a rule's condition must hold before it decides."""
    said = []
    if config.for_count > 1:
        said.append(f"{config.for_count} in a row")
    if config.for_s > 0:
        said.append(f"{config.for_s:g} s")
    return " and ".join(said) or "none"


def _set(config: Any) -> str:
    """What the configuration changed from the rule's defaults."""
    changed = config.model_dump(mode="json", exclude_defaults=True)
    return orjson.dumps(changed).decode() if changed else ""


def register(app: typer.Typer) -> None:
    app.command("rules")(rules)
