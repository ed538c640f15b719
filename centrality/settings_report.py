"""Every settings class of the project, found rather than listed, and where each value came from.

A settings class is any `BaseSettings` subclass defined in our packages; modules that define one
are found by reading the source (so a new class is listed without editing anything here). The
origin of a value is asked of the class's own sources, in its own order of precedence
(`settings_customise_sources`), so a class that adds or reorders sources is reported truly.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson
from pydantic import AliasChoices, SecretBytes, SecretStr
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    DotEnvSettingsSource,
    EnvSettingsSource,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SecretsSettingsSource,
)

PACKAGES = ("schemas", "collectors", "streams", "actions", "centrality")
ROOT = Path(__file__).resolve().parents[1]
MASK = "********"


@dataclass(frozen=True)
class Setting:
    group: str  # the settings class
    variable: str
    value: str
    source: str  # env, the .env file's path, a secrets dir, or default
    secret: bool


def settings_classes() -> list[type[BaseSettings]]:
    for module in _defining_modules():
        importlib.import_module(module)
    found: dict[str, type[BaseSettings]] = {}
    todo = list(BaseSettings.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.split(".")[0] in PACKAGES:
            found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    # A class another one extends is shown through it, its settings once (the local stack's).
    classes = found.values()
    leaves = [c for c in classes if not any(o is not c and issubclass(o, c) for o in classes)]
    return sorted(leaves, key=lambda c: str(c.model_config.get("env_prefix", "")))


def _defining_modules() -> Iterator[str]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            if "Settings" in text and _defines_settings(text):
                yield ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _defines_settings(source: str) -> bool:
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                name = base.id if isinstance(base, ast.Name) else getattr(base, "attr", "")
                if name.endswith("Settings"):  # BaseSettings, or one of ours it extends
                    return True
    return False


def report() -> list[Setting]:
    return [row for cls in settings_classes() for row in rows_of(cls)]


def rows_of(cls: type[BaseSettings]) -> Iterator[Setting]:
    effective = cls()
    sources = [(_source_name(s), s, s()) for s in _sources(cls)]
    for name, field in cls.model_fields.items():
        names = variables(cls, name, field)
        # A source gives a value under the field's name, or under its (first) alias.
        key = names[0] if field.validation_alias is not None else field.alias or name
        found = next(((label, src) for label, src, values in sources if key in values), None)
        value = getattr(effective, name)
        secret = isinstance(value, SecretStr | SecretBytes)
        yield Setting(
            group=cls.__name__,
            variable=_read_as(names, found[1] if found else None).upper(),
            value=MASK if secret else _shown(value),
            source=found[0] if found else "default",
            secret=secret,
        )


def variables(cls: type[BaseSettings], name: str, field: FieldInfo) -> list[str]:
    """The names a setting is read under, its documented one first: its alias (any of several
    choices), or the class's prefix and the field's name."""
    alias = field.validation_alias
    if isinstance(alias, str):
        return [alias]
    if isinstance(alias, AliasChoices):
        return [c for c in alias.choices if isinstance(c, str)]
    return [field.alias or f"{cls.model_config.get('env_prefix', '')}{name}"]


def _read_as(names: list[str], source: PydanticBaseSettingsSource | None) -> str:
    """Which of a setting's names its source holds (an environment's variables are looked up
    as it looks them up); the documented one otherwise."""
    held = getattr(source, "env_vars", {})
    folded = not getattr(source, "case_sensitive", False)
    return next((n for n in names if (n.lower() if folded else n) in held), names[0])


def _sources(cls: type[BaseSettings]) -> tuple[PydanticBaseSettingsSource, ...]:
    return cls.settings_customise_sources(
        cls,
        init_settings=InitSettingsSource(cls, init_kwargs={}),
        env_settings=EnvSettingsSource(cls),
        dotenv_settings=DotEnvSettingsSource(cls),
        file_secret_settings=SecretsSettingsSource(cls),
    )


def _source_name(source: PydanticBaseSettingsSource) -> str:
    if isinstance(source, DotEnvSettingsSource):  # before its base class, EnvSettingsSource
        return f"file {source.env_file}"
    if isinstance(source, EnvSettingsSource):
        return "env"
    if isinstance(source, SecretsSettingsSource):
        return f"secrets {source.secrets_dir}"
    return type(source).__name__


def _shown(value: Any) -> str:
    """As the variable would be written: complex values in JSON, as pydantic-settings reads them."""
    if value is None:
        return "—"
    if isinstance(value, tuple | list | dict | set | frozenset):
        return orjson.dumps(value, default=str).decode()
    text = str(value)
    parts = urlsplit(text)
    if parts.password:  # a URL with credentials in it: the password is as secret as a SecretStr
        return parts._replace(
            netloc=parts.netloc.replace(f":{parts.password}@", f":{MASK}@")
        ).geturl()
    return text
