"""docs/settings.md, made from the settings classes themselves (`centrality config --markdown`):
every variable, its default and its description, so the page cannot drift from the code.

Defaults are shown as the code gives them, with what depends on the machine written generally
(this host's name, the home directory), so the page is the same wherever it is made.
"""

from __future__ import annotations

import inspect
import socket
from pathlib import Path
from typing import Any

from pydantic_core import PydanticUndefined
from pydantic_settings import BaseSettings

from centrality.settings_report import ROOT, _shown, settings_classes, variables

HEADER = """# Settings

Every setting is an environment variable read by one of these pydantic-settings classes (a
`.env` file in the working directory is read too). Complex values (lists, mappings) are JSON.
`centrality config` shows the values in effect and where each came from; `centrality doctor`
checks them against the running services.

This page is generated: `centrality config --markdown > docs/settings.md` (a test fails when it
is stale). The OpenTelemetry SDK reads more `OTEL_*` variables itself: see
[tracing.md](tracing.md).
"""


def markdown() -> str:
    sections = [HEADER]
    found = sorted(
        settings_classes(),
        key=lambda c: (str(c.model_config.get("env_prefix", "")), c.__module__, c.__qualname__),
    )
    sections += [_section(cls) for cls in found]
    return "\n".join(sections)


def _section(cls: type[BaseSettings]) -> str:
    prefix = str(cls.model_config.get("env_prefix", ""))
    doc = inspect.cleandoc(cls.__dict__.get("__doc__") or "")  # its own, not BaseSettings'
    lines = [f"## `{prefix}*` — `{cls.__module__}.{cls.__qualname__}`", ""]
    if doc:
        lines += [" ".join(doc.split()), ""]
    lines += ["| variable | default | meaning |", "|---|---|---|"]
    defaults: dict[str, Any] = {}  # a default may follow an earlier one (the port offset's)
    for name, field in cls.model_fields.items():
        variable, *also = (v.upper() for v in variables(cls, name, field))
        meaning = " ".join((field.description or "").split()).replace("|", "\\|")
        if also:
            meaning += f" (Also read as {', '.join(f'`{v}`' for v in also)}.)"
        required = field.default is PydanticUndefined and field.default_factory is None
        if not required:
            defaults[name] = field.get_default(call_default_factory=True, validated_data=defaults)
        shown = "required" if required else _default(defaults[name])
        lines.append(f"| `{variable}` | {shown} | {meaning} |")
    return "\n".join(lines) + "\n"


def _default(value: Any) -> str:
    if value is None:
        return "—"
    text = _shown(value)
    text = text.replace(str(ROOT), "<the installed package>")
    text = text.replace(str(Path.home()), "~").replace(socket.gethostname(), "<this host>")
    return f"`{text}`".replace("|", "\\|") if text else '`""`'
