"""The compose file is valid for Compose v2 and wires what Docker users rely on: every worker
from the project's image running a real `centrality` command, Kafka reachable from the host,
pinned images and plugins, and a `simulate` profile that fills the dashboards."""

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.exceptions import TyperException

from tests.support.cli_argv import parse_cli
from tests.support.compose import COMPOSE, compose_config, resolved

ROOT = Path(__file__).resolve().parents[2]
WORKERS = {"init", "streams", "actions", "sink", "simulate"}
# An exact release: three or more numeric parts, never `latest` or a floating minor.
EXACT_TAG = re.compile(r":v?\d+(\.\d+){2,}$")


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    found: dict[str, Any] = resolved()["services"]
    return found


def test_compose_file_is_valid() -> None:
    result = compose_config(COMPOSE, "-q")
    assert result.returncode == 0, result.stderr


def test_validator_rejects_a_broken_file(tmp_path: Path) -> None:
    broken = tmp_path / "infra" / "compose"
    shutil.copytree(COMPOSE.parent, broken)
    # A worker depending on a service that does not exist is a typical slip.
    text = (broken / "compose.yaml").read_text().replace("\n  init:\n", "\n  no-such-init:\n", 1)
    (broken / "compose.yaml").write_text(text)
    assert compose_config(broken / "compose.yaml", "-q").returncode != 0


def test_every_worker_runs_the_projects_image(services: dict[str, Any]) -> None:
    built = {name for name, s in services.items() if "build" in s}
    assert built == WORKERS
    images = {services[name]["image"] for name in built}
    assert len(images) == 1, f"one image for every worker, not {images}"
    for name in built:
        build = services[name]["build"]
        assert Path(build["context"]) == ROOT
        assert build["dockerfile"] == "Dockerfile" and (ROOT / "Dockerfile").is_file()


@pytest.mark.parametrize("name", sorted(WORKERS))
def test_every_worker_command_is_a_real_centrality_command(
    services: dict[str, Any], name: str
) -> None:
    parse_cli(services[name]["command"])


def test_the_command_check_catches_a_wrong_command() -> None:
    with pytest.raises(TyperException, match="No such option"):
        parse_cli(["simulate", "--no-such-option=1"])
    with pytest.raises(TyperException, match="integer"):
        parse_cli(["simulate", "--nodes=many"])
    with pytest.raises(KeyError):
        parse_cli(["stream"])
    with pytest.raises(KeyError):
        parse_cli(["watch"])


def test_workers_reach_kafka_inside_the_network(services: dict[str, Any]) -> None:
    advertised = services["kafka"]["environment"]["KAFKA_ADVERTISED_LISTENERS"].split(",")
    for name in WORKERS:
        bootstrap = services[name]["environment"]["CENTRALITY_KAFKA_BOOTSTRAP"]
        assert any(a.endswith(f"://{bootstrap}") for a in advertised), bootstrap


@pytest.mark.parametrize("host_port", [None, "29092"])
def test_kafka_is_published_on_loopback_and_advertised_there(host_port: str | None) -> None:
    kafka = resolved({"KAFKA_HOST_PORT": host_port} if host_port else None)["services"]["kafka"]
    env = kafka["environment"]
    listeners = {
        name: int(port)
        for name, port in re.findall(r"(\w+)://[^:,]*:(\d+)", env["KAFKA_LISTENERS"])
    }
    advertised = dict(re.findall(r"(\w+)://([^,]+)", env["KAFKA_ADVERTISED_LISTENERS"]))
    [port] = kafka["ports"]
    assert port["host_ip"] == "127.0.0.1"
    assert port["published"] == (host_port or "9092")
    # The listener behind the published port tells clients the address they used.
    [listener] = [n for n, p in listeners.items() if p == port["target"]]
    assert advertised[listener] == f"127.0.0.1:{port['published']}"
    assert listener in env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"]


def test_every_image_and_plugin_is_pinned(services: dict[str, Any]) -> None:
    for name, service in services.items():
        assert EXACT_TAG.search(service["image"]), f"{name}: {service['image']} is not pinned"
    grafana = services["grafana"]["environment"]
    assert "GF_INSTALL_PLUGINS" not in grafana  # unpinned by design in Grafana 12
    plugins = grafana["GF_PLUGINS_PREINSTALL_SYNC"].split(",")
    for plugin in plugins:
        assert re.fullmatch(r"[\w-]+@\d+\.\d+\.\d+", plugin.strip()), plugin
    datasource = yaml.safe_load(
        (ROOT / "dashboards/provisioning/datasources/clickhouse.yaml").read_text()
    )
    kind = datasource["datasources"][0]["type"]
    assert kind in {p.split("@")[0] for p in plugins}


def test_simulate_profile_is_off_by_default_and_fills_the_pipeline(
    services: dict[str, Any],
) -> None:
    plain = compose_config(COMPOSE, "--services")
    assert plain.returncode == 0, plain.stderr
    assert "simulate" not in plain.stdout.split()
    simulate = services["simulate"]
    assert simulate["profiles"] == ["simulate"]
    ctx = parse_cli(simulate["command"])
    assert ctx.command.name == "simulate"
    # Faults, so the remediation dashboards have stories, and in real time, so the time-based
    # panels fill as they would on a real cluster.
    assert ctx.params["xid_nodes"] > 0 and ctx.params["crash_jobs"] > 0
    assert ctx.params["speed"] == 1
    assert {"streams", "actions", "sink"} <= set(simulate["depends_on"])


def test_grafana_provisioning_is_mounted(services: dict[str, Any]) -> None:
    for mount in services["grafana"]["volumes"]:
        assert Path(mount["source"]).is_dir(), f"grafana mounts {mount['source']}, missing"


def test_worker_settings_are_documented_settings(services: dict[str, Any]) -> None:
    readme = (ROOT / "docs" / "settings.md").read_text()  # generated from the classes
    for name in WORKERS:
        for variable in services[name].get("environment", {}):
            assert variable.startswith("CENTRALITY_"), f"{name}: {variable}"
            assert f"`{variable}`" in readme, f"{name}: {variable} is not a documented setting"
