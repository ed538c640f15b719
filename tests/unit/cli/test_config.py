"""`centrality config`: every settings class, secrets never shown, where each value came from."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from centrality.settings_report import MASK, rows_of, settings_classes

CLI = str(Path(sys.executable).with_name("centrality"))
ROOT = Path(__file__).resolve().parents[3]


def run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    # Only the settings the test gives: none of the runner's own.
    outside = {k: v for k, v in os.environ.items() if not k.startswith("CENTRALITY_")}
    environ = {**outside, "PYTHONPATH": str(ROOT), **env}
    return subprocess.run(
        [CLI, *args], env=environ, capture_output=True, text=True, timeout=60, cwd=cwd
    )


def test_every_settings_class_of_the_project_is_found() -> None:
    names = {cls.__name__ for cls in settings_classes()}
    assert {
        "KafkaSettings", "ClickHouseSettings", "EmitterSettings", "ContractSettings",
        "SigningSettings", "StreamsSettings", "SinkSettings", "ActionsSettings", "SlackSettings",
        "AgentSettings", "TailSettings", "StackSettings", "SlurmWatchSettings",
    } <= names  # fmt: skip
    # Found by reading the source, so the list is every class defined anywhere in our packages;
    # one another extends is shown through that one (the local stack's settings, once).
    base_of = dict(
        pair
        for package in ("schemas", "collectors", "streams", "actions", "centrality")
        for path in (ROOT / package).rglob("*.py")
        for pair in re.findall(r"^class (\w+)\((\w+Settings)\):", path.read_text(), re.M)
    )
    ours = {name for name in base_of if _settles(name, base_of)}
    assert ours - set(base_of.values()) == names


def _settles(name: str, base_of: dict[str, str]) -> bool:
    """Whether the class extends BaseSettings, itself or through classes of ours."""
    while name in base_of:
        name = base_of[name]
    return name == "BaseSettings"


def test_a_value_from_a_dotenv_file_is_reported_as_from_that_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text("DEMO_HOST=from-file\nDEMO_PORT=1\nDEMO_PASSWORD=in-the-file\n")
    monkeypatch.setenv("DEMO_PORT", "2")

    class Demo(BaseSettings):
        model_config = SettingsConfigDict(env_prefix="DEMO_", env_file=dotenv, extra="ignore")
        host: str = "localhost"
        port: int = 0
        user: str = "default"
        password: SecretStr | None = None

    rows = {r.variable: (r.value, r.source) for r in rows_of(Demo)}
    assert rows == {
        "DEMO_HOST": ("from-file", f"file {dotenv}"),
        "DEMO_PORT": ("2", "env"),  # the environment wins over the file, as in pydantic-settings
        "DEMO_USER": ("default", "default"),
        "DEMO_PASSWORD": (MASK, f"file {dotenv}"),
    }


def test_the_rule_settings_are_shown_under_the_name_they_were_read_by(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from streams.settings import StreamsSettings

    def rules() -> tuple[str, str]:
        [row] = [r for r in rows_of(StreamsSettings) if r.variable.endswith("RULES")]
        return row.variable, row.source

    for name in ("CENTRALITY_RULES", "CENTRALITY_STREAMS_RULES"):
        monkeypatch.delenv(name, raising=False)
    assert rules() == ("CENTRALITY_RULES", "default")
    monkeypatch.setenv("CENTRALITY_RULES", "my_rules.nccl")
    assert rules() == ("CENTRALITY_RULES", "env")
    monkeypatch.delenv("CENTRALITY_RULES")
    monkeypatch.setenv("CENTRALITY_STREAMS_RULES", "my_rules.nccl")  # the other name it reads
    assert rules() == ("CENTRALITY_STREAMS_RULES", "env")
    monkeypatch.setenv("CENTRALITY_STREAMS_RULE_CONFIG", '{"fatal_xid": {"mode": "shadow"}}')
    config = {r.variable: r for r in rows_of(StreamsSettings)}["CENTRALITY_STREAMS_RULE_CONFIG"]
    assert (config.value, config.source) == ('{"fatal_xid":{"mode":"shadow"}}', "env")
