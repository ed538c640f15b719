"""Reading a process's `/metrics`, `/healthz` and `/readyz` as Prometheus would."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import requests
from prometheus_client.parser import text_string_to_metric_families


@dataclass(frozen=True)
class Scrape:
    samples: list[tuple[str, dict[str, str], float]]

    def value(self, name: str, **labels: str) -> float:
        """The sum of `name`'s samples carrying these labels (0 when there are none)."""
        return sum(
            v
            for n, sample_labels, v in self.samples
            if n == name and all(sample_labels.get(k) == want for k, want in labels.items())
        )

    def names(self) -> set[str]:
        return {n for n, _, _ in self.samples}


def scrape(port: int) -> Scrape:
    answer = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5)
    answer.raise_for_status()
    return Scrape(
        [
            (s.name, dict(s.labels), s.value)
            for family in text_string_to_metric_families(answer.text)
            for s in family.samples
        ]
    )


def status(port: int, path: str) -> tuple[int, str]:
    try:
        answer = requests.get(f"http://127.0.0.1:{port}{path}", timeout=5)
    except requests.ConnectionError as exc:
        return 0, repr(exc)
    return answer.status_code, answer.text


def wait_until(
    what: str, done: Callable[[], bool], timeout_s: float, check: Callable[[], None]
) -> None:
    """Poll `done` until true; `check` fails early (a worker died)."""
    deadline = time.monotonic() + timeout_s
    while not done():
        check()
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g}s waiting for {what}")
        time.sleep(0.5)
