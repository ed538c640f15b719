"""The wheel, installed into a fresh virtual environment where no source tree is, as an operator
installs it: the base alone imports what producers use (and none of the extras' libraries), and
with the `workers` and `local` extras `centrality up`, the demo's story and `centrality down`
run from it, on the migrations and the Kafka pom the wheel carries.

Third-party wheels are fetched (and sdists built) once per constraints.txt and pyproject.toml into
the stack's cache dir (`wheels/<hash>`, like the Kafka jars), then installed offline from there;
houses of other hashes are left alone (another session may be installing from one) and can be
deleted by hand.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from centrality.stack.settings import StackSettings
from schemas.jsonschema import JSON_DIR
from streams.history.settings import DDL_DIR
from tests.ports import free_ports

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("schemas", "collectors", "streams", "actions", "centrality")
CONSTRAINTS = ROOT / "constraints.txt"
EXTRAS = "workers,local"
# Import names of what only the extras install: a base install must not have them.
NOT_IN_BASE = ("faust", "mode", "clickhouse_connect", "slack_sdk", "chdb", "pynvml", "kubernetes")
# What a producer's environment imports: the contract, the Emitter, the checkpoint SDK, the CLI.
BASE_IMPORTS = """
import importlib, importlib.util, pkgutil, sys
import schemas
modules = [m.name for m in pkgutil.walk_packages(schemas.__path__, "schemas.")]
modules = [m for m in modules if m != "schemas.runtime.faust_codec"]  # a codec for Faust users
modules += ["schemas.runtime.emitter", "collectors.checkpoints.notify",
            "collectors.checkpoints.callbacks", "centrality.cli"]
for name in modules:
    importlib.import_module(name)
present = [n for n in sys.argv[1:] if importlib.util.find_spec(n) is not None]
assert not present, f"the base install has {present}"
print(len(modules))
"""


def run(
    argv: list[str | Path], *, cwd: Path, env: dict[str, str] | None = None, timeout_s: float = 600
) -> str:
    done = subprocess.run(
        [str(a) for a in argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    assert done.returncode == 0, (
        f"{argv} exited {done.returncode}:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    )
    return done.stdout


def clean_env(**extra: str) -> dict[str, str]:
    """This shell's environment without anything that points at the source tree or a stack."""
    keep = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "VIRTUAL_ENV") and not k.startswith("CENTRALITY_")
    }
    return {**keep, **extra}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built from a copy of what the wheel is made of, so nothing else of the tree (and no stale
    `build/`) can leak into it."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source)
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    dist = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", dist, source], cwd=dist)
    [built] = dist.glob("centrality-*.whl")
    return built


@pytest.fixture(scope="module")
def wheelhouse(wheel: Path) -> Path:
    """Every third-party wheel of the base and the extras, pinned by constraints.txt."""
    digest = hashlib.sha256(CONSTRAINTS.read_bytes() + (ROOT / "pyproject.toml").read_bytes())
    house = StackSettings().cache_dir / "wheels" / digest.hexdigest()[:16]
    if not (house / ".complete").exists():
        house.parent.mkdir(parents=True, exist_ok=True)
        # Beside its final place, so the rename below is atomic: nobody sees a half-filled house.
        fetching = Path(tempfile.mkdtemp(prefix=".fetching-", dir=house.parent))
        try:
            run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "wheel",  # not `download`: sdists (python-hostlist) become wheels, built once
                    "-q",
                    "-w",
                    fetching,
                    f"{wheel}[{EXTRAS}]",
                    "-c",
                    CONSTRAINTS,
                ],
                cwd=fetching,
            )
            for ours in fetching.glob("centrality-*"):
                ours.unlink()
        except BaseException:
            shutil.rmtree(fetching)
            raise
        (fetching / ".complete").touch()
        try:
            fetching.rename(house)
        except OSError:  # another run finished first: theirs is the same
            shutil.rmtree(fetching)
    return house


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("venv")
    run([sys.executable, "-m", "venv", where], cwd=where)
    return where


def install(venv: Path, wheelhouse: Path, requirement: str) -> None:
    run(
        [
            venv / "bin" / "pip",
            "install",
            "-q",
            "--no-index",
            "--find-links",
            wheelhouse,
            requirement,
            "-c",
            CONSTRAINTS,
        ],
        cwd=venv,
        env=clean_env(),
    )


def site_packages(venv: Path) -> Path:
    [found] = venv.glob("lib/python3.*/site-packages")
    return found


def test_the_base_install_carries_the_contract_and_none_of_the_extras(
    venv: Path, wheel: Path, wheelhouse: Path, tmp_path: Path
) -> None:
    install(venv, wheelhouse, str(wheel))
    python, env = venv / "bin" / "python", clean_env()
    imported = run([python, "-c", BASE_IMPORTS, *NOT_IN_BASE], cwd=tmp_path, env=env)
    assert int(imported) > 20
    site = site_packages(venv)
    assert sorted(p.name for p in (site / "schemas" / "json").rglob("*.json")) == sorted(
        p.name for p in JSON_DIR.rglob("*.json")
    )
    assert sorted(p.name for p in (site / "streams" / "history" / "ddl").glob("*.sql")) == sorted(
        p.name for p in DDL_DIR.glob("*.sql")
    )
    # The CLI is whole without the extras; what needs one says which.
    assert "emit" in run([venv / "bin" / "centrality", "--help"], cwd=tmp_path, env=env)
    listed = run([venv / "bin" / "centrality", "schemas", "list"], cwd=tmp_path, env=env)
    assert "JobExited" in listed
    bench = subprocess.run(
        [venv / "bin" / "centrality", "bench"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert bench.returncode == 2 and "centrality[workers,local]" in bench.stderr


@pytest.fixture
def stack_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    kafka, controller, clickhouse = free_ports(3)
    state = tmp_path / "state"
    yield clean_env(
        CENTRALITY_STACK_STATE_DIR=str(state),
        # A cache of its own: the broker's jars come through the pom the wheel carries.
        CENTRALITY_STACK_CACHE_DIR=str(tmp_path / "cache"),
        CENTRALITY_STACK_KAFKA_PORT=str(kafka),
        CENTRALITY_STACK_KAFKA_CONTROLLER_PORT=str(controller),
        CENTRALITY_STACK_CLICKHOUSE_PORT=str(clickhouse),
        CENTRALITY_TRIGGER_KEY_FILE=str(state / "trigger.key"),
        CENTRALITY_EMITTER_SPOOL_DIR=str(state / "spool"),
        CENTRALITY_STREAMS_DATA_DIR=str(state / "streams"),
    )


def test_up_a_story_and_down_run_from_the_installed_wheel(
    venv: Path, wheel: Path, wheelhouse: Path, stack_env: dict[str, str], tmp_path: Path
) -> None:
    install(venv, wheelhouse, f"{wheel}[{EXTRAS}]")
    centrality = venv / "bin" / "centrality"
    try:
        up = json.loads(
            run([centrality, "up", "--json"], cwd=tmp_path, env=stack_env).splitlines()[-1]
        )
        # Every migration the wheel carries was found and applied: none is "none pending".
        assert up["migrations_applied"] == sorted(int(p.name[:3]) for p in DDL_DIR.glob("*.sql"))
        assert up["catalog"]["created"]
        # The demo fails unless ClickHouse ends up holding every step of its story.
        story = run(
            [centrality, "demo", "--timeout-s", "300"], cwd=tmp_path, env=stack_env, timeout_s=420
        )
        assert "What Slack was told" in story
    finally:
        run([centrality, "down"], cwd=tmp_path, env=stack_env)
    status = json.loads(run([centrality, "status", "--json"], cwd=tmp_path, env=stack_env))
    assert [s["running"] for s in status] == [False, False]
