"""The project's Kubernetes manifests as kustomize renders them (`make tools` installs it)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "infra" / "k8s"
KUSTOMIZE = ROOT / ".tools" / "bin" / "kustomize"

Doc = dict[str, Any]


def render(target: str) -> list[Doc]:
    """`kustomize build infra/k8s/<target>`, one dict per object."""
    assert KUSTOMIZE.exists(), "kustomize is installed by `make tools`"
    out = subprocess.run(
        [str(KUSTOMIZE), "build", str(K8S / target)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    return [d for d in yaml.safe_load_all(out) if d]
