"""An adapter that changes nothing real: it records requests, for the demo and tests."""

from __future__ import annotations

from typing import Any

from actions.adapters.base import adapter


@adapter("memory")
class InMemoryAdapter:
    name = "memory"

    def __init__(self) -> None:
        self.requeued: list[tuple[str, str | None]] = []

    def requeue(self, job_id: str, *, checkpoint_uri: str | None) -> dict[str, Any]:
        self.requeued.append((job_id, checkpoint_uri))
        return {
            "scheduler": self.name,
            "job_id": job_id,
            "checkpoint_uri": checkpoint_uri,
            "requeued": len(self.requeued),
        }
