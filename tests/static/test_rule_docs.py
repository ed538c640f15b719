"""The rule examples people copy are run: docs/rules.md's shortest rule and its try-out, and its
rule module (the issue's "notify when a job logs an NCCL timeout twice within 10 minutes", with
its own memory of the job), its tests, its image and its Kubernetes overlay. Each is cut from the
page (`<!-- example: NAME -->` before a fenced block), so the pages cannot drift from the code."""

from __future__ import annotations

import importlib
import inspect
import json
import runpy
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from dockerfile_parse import DockerfileParser

from centrality.version import version
from streams.rules.registry import RuleEngine
from streams.settings import rule_modules
from tests.support.docs_examples import examples
from tests.support.kustomize import K8S, KUSTOMIZE
from tests.support.tools import hadolint

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def rules_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where example modules are written: importable, as from a package of one's own."""
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_the_shortest_rule_is_loaded_beside_the_built_ins_and_decides(rules_dir: Path) -> None:
    written = examples("docs/rules.md")
    (rules_dir / "my_rules.py").write_text(written["my_rules.py"])
    runpy.run_path(str(rules_dir / _written(rules_dir, "try_my_rules.py", written)))


def test_the_rules_page_module_passes_the_pages_own_tests(rules_dir: Path) -> None:
    written = examples("docs/rules.md")
    (rules_dir / "nccl_timeouts.py").write_text(written["nccl_timeouts.py"])
    _written(rules_dir, "test_nccl_timeouts.py", written)
    tests = importlib.import_module("test_nccl_timeouts")
    found = [f for name, f in inspect.getmembers(tests, inspect.isfunction) if name[:5] == "test_"]
    assert len(found) >= 4
    for test in found:
        test()


def test_the_rules_page_image_builds_on_the_projects_image(tmp_path: Path) -> None:
    dockerfile = _written(tmp_path, "Dockerfile", examples("docs/rules.md"))
    linted = hadolint(dockerfile)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    parsed = DockerfileParser(str(dockerfile))
    project = DockerfileParser(str(ROOT / "Dockerfile"))
    assert parsed.baseimage.endswith(f"/centrality:{version()}")  # the project's, as built
    [installs] = [i["value"] for i in parsed.structure if i["instruction"] == "RUN"]
    assert installs.startswith("/opt/centrality/bin/pip install")  # the image's environment
    users = [i["value"] for i in parsed.structure if i["instruction"] == "USER"]
    assert users[-1] == [i["value"] for i in project.structure if i["instruction"] == "USER"][-1]


def test_the_rules_page_overlay_runs_the_rules_on_the_streams_workers(
    tmp_path: Path, rules_dir: Path
) -> None:
    assert KUSTOMIZE.exists(), "kustomize is installed by `make tools`"
    written = examples("docs/rules.md")
    k8s = tmp_path / "k8s"
    shutil.copytree(K8S, k8s)
    overlay = k8s / "overlays" / "my-rules"
    overlay.mkdir()
    _written(overlay, "kustomization.yaml", written)
    out = subprocess.run(
        [str(KUSTOMIZE), "build", str(overlay)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    docs = [d for d in yaml.safe_load_all(out) if d]
    [streams] = [
        d
        for d in docs
        if d["kind"] == "StatefulSet" and d["metadata"]["name"] == "centrality-streams"
    ]
    [container] = streams["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "registry.example.com/centrality-rules:1"
    assert container["command"] == ["centrality", "streams"]
    read = {r["configMapRef"]["name"] for r in container["envFrom"] if "configMapRef" in r}
    [settings] = [
        d
        for d in docs
        if d["kind"] == "ConfigMap"
        and d["metadata"]["namespace"] == "centrality"
        and d["metadata"]["name"] in read
    ]
    env = settings["data"]
    assert env["CENTRALITY_KAFKA_BOOTSTRAP"]  # merged into the base's settings, not replacing
    # What it configures is what the worker loads: the page's module, its rule in shadow.
    (rules_dir / "nccl_timeouts.py").write_text(written["nccl_timeouts.py"])
    modules = rule_modules(env["CENTRALITY_RULES"].split(","))
    engine = RuleEngine.load(modules, json.loads(env["CENTRALITY_STREAMS_RULE_CONFIG"]))
    [mine] = [b for b in engine.rules if b.spec.name == "nccl_timeout_twice"]
    assert mine.config.mode == "shadow"


def _written(directory: Path, name: str, written: dict[str, str]) -> Path:
    path = directory / name
    path.write_text(written[name])
    return path
