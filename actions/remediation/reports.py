"""The JSON line each node tool prints (`"kind"` marks ours among whatever else a job printed),
found in a run's output, per node."""

from __future__ import annotations

import json
from typing import Any


def reports_of(stdout: str, kind: str) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            doc = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(doc, dict) and doc.get("kind") == kind and isinstance(doc.get("node"), str):
            found[doc["node"]] = doc
    return found
