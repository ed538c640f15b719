"""The one container image: its Dockerfile passes hadolint, builds in stages from pinned bases
with the pinned constraints, runs as a non-root user, and its build context (.dockerignore)
holds what the Dockerfile copies and nothing of the work tree besides."""

import re
from pathlib import Path

import pytest
from docker.utils.build import exclude_paths
from dockerfile_parse import DockerfileParser

from tests.support.tools import hadolint

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"


@pytest.fixture(scope="module")
def parsed() -> DockerfileParser:
    return DockerfileParser(str(DOCKERFILE))


def stages(parsed: DockerfileParser) -> list[list[dict[str, str]]]:
    found: list[list[dict[str, str]]] = []
    for instruction in parsed.structure:
        if instruction["instruction"] == "FROM":
            found.append([])
        if found:
            found[-1].append(instruction)
    return found


def test_hadolint_finds_nothing() -> None:
    result = hadolint(DOCKERFILE)
    assert result.returncode == 0, result.stdout + result.stderr


def test_hadolint_would_catch_a_careless_dockerfile(tmp_path: Path) -> None:
    careless = tmp_path / "Dockerfile"
    careless.write_text("FROM python:latest\nRUN pip install centrality\nCMD centrality\n")
    result = hadolint(careless)
    assert result.returncode != 0
    for rule in ("DL3007", "DL3013", "DL3042", "DL3025"):
        assert rule in result.stdout, result.stdout


def test_bases_are_pinned_and_the_build_is_multi_stage(parsed: DockerfileParser) -> None:
    assert len(stages(parsed)) >= 2
    for image in parsed.parent_images:
        assert re.search(r":\d+\.\d+\.\d+[\w.-]*$", image), f"{image} is not pinned"


def test_the_runtime_stage_is_slim_and_non_root(parsed: DockerfileParser) -> None:
    runtime = stages(parsed)[-1]
    # Only the installed environment is carried over, not the build stage's sources or tools.
    copies = [i["value"] for i in runtime if i["instruction"] == "COPY"]
    assert any(c.startswith("--from=build /opt/centrality ") for c in copies)
    assert not any(c.split()[0] in {"schemas", "centrality", "."} for c in copies)
    [user] = [i["value"] for i in runtime if i["instruction"] == "USER"]
    uid = user.split(":")[0]
    assert uid.isdigit() and int(uid) != 0, "a numeric non-root uid (runAsNonRoot checks it)"
    assert "slim" in parsed.baseimage
    assert runtime[-2]["instruction"] == "ENTRYPOINT" and '"centrality"' in runtime[-2]["value"]


def test_dependencies_come_from_the_pinned_constraints(parsed: DockerfileParser) -> None:
    runs = [i["value"] for i in parsed.structure if i["instruction"] == "RUN"]
    installs = [command for command in runs if "pip install" in command]
    assert installs
    for command in installs:
        assert "--constraint constraints.txt" in command, command
        assert " -e " not in command and "--editable" not in command


def copied_sources(parsed: DockerfileParser) -> list[str]:
    sources: list[str] = []
    for instruction in parsed.structure:
        if instruction["instruction"] == "COPY" and not instruction["value"].startswith("--from"):
            sources += instruction["value"].split()[:-1]
    return sources


def test_every_copied_path_is_in_the_build_context(parsed: DockerfileParser) -> None:
    patterns = (ROOT / ".dockerignore").read_text().splitlines()
    context = set(exclude_paths(str(ROOT), [p for p in patterns if p and not p.startswith("#")]))
    sources = copied_sources(parsed)
    assert "constraints.txt" in sources
    for source in sources:
        assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
        assert source in context, f"COPY {source}: excluded by .dockerignore"
        if (ROOT / source).is_dir():
            python = {str(p.relative_to(ROOT)) for p in (ROOT / source).rglob("*.py")}
            assert python <= context, f"{source}: files excluded: {sorted(python - context)[:3]}"


def test_the_build_context_leaves_out_the_work_tree() -> None:
    patterns = (ROOT / ".dockerignore").read_text().splitlines()
    context = set(exclude_paths(str(ROOT), [p for p in patterns if p and not p.startswith("#")]))
    for kept_out in ("tests", ".git", ".venv", "dashboards", "BENCHMARKS.md", "infra/compose"):
        assert not any(p == kept_out or p.startswith(f"{kept_out}/") for p in context), kept_out
    assert not any("__pycache__" in p for p in context)


def test_the_images_settings_are_documented_settings(parsed: DockerfileParser) -> None:
    readme = (ROOT / "docs" / "settings.md").read_text()  # generated from the classes
    settings = [name for name in parsed.envs if name.startswith("CENTRALITY_")]
    assert settings
    for name in settings:
        assert f"`{name}`" in readme, f"{name} is not a documented setting"
    # The migrations travel inside the installed package; the image must not point elsewhere.
    assert "CENTRALITY_CLICKHOUSE_MIGRATIONS_DIR" not in parsed.envs
