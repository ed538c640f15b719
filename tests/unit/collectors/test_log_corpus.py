"""The log tailer's signal extraction on lines from real public sources.

Each case in tests/fixtures/realworld/logs/cases.yaml carries the signal and rank written by
hand (and, where NCCL names the other end that failed, the peer); PROVENANCE.md beside it says
where every line comes from.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from collectors.logs.patterns import Matcher
from collectors.logs.peers import peer_of
from collectors.logs.prefixes import read_prefix, split_prefix

CORPUS = Path(__file__).parents[2] / "fixtures" / "realworld" / "logs"
CASES: list[dict[str, Any]] = yaml.safe_load((CORPUS / "cases.yaml").read_text())
MATCHER = Matcher(())


def test_the_corpus_is_large_and_every_source_is_documented() -> None:
    provenance = (CORPUS / "PROVENANCE.md").read_text()
    assert len(CASES) >= 120
    for case in CASES:
        for source in case["source"].split("+"):
            assert f"`{source}`" in provenance, source


@pytest.mark.parametrize("case", CASES, ids=[f"{i}-{c['source']}" for i, c in enumerate(CASES)])
def test_signal_and_rank_of_a_real_line(case: dict[str, Any]) -> None:
    rank, body = split_prefix(case["line"])
    found = MATCHER.match(body)
    assert (found.signal.value if found else None, rank) == (case["signal"], case["rank"])
    assert peer_of(body) == case.get("peer")


TIMED = [c for c in CASES if "at" in c or "body" in c]


@pytest.mark.parametrize("case", TIMED, ids=[f"{i}-{c['source']}" for i, c in enumerate(TIMED)])
def test_time_and_body_behind_a_real_prefix(case: dict[str, Any]) -> None:
    # A time written without a zone is read in the zone the tailer is given (here UTC).
    found = read_prefix(case["line"], UTC)
    if "at" in case:
        expected = case["at"] and datetime.fromisoformat(case["at"])
        assert found.at == expected
        assert found.at is None or found.at.tzinfo is not None
    if "body" in case:
        assert found.body == case["body"]


def test_the_prefixes_read_every_precision_and_zone() -> None:
    # seconds, milliseconds, microseconds and nanoseconds; Z, +hh:mm, +hhmm and none
    precisions = {found.at.microsecond for c in TIMED if (found := read_prefix(c["line"], UTC)).at}
    assert {0, 500000, 631552, 238986} <= precisions
    zones = {"Z" in c["line"][:40] or "+00:00" in c["line"][:40] for c in TIMED if c.get("at")}
    assert zones == {True, False}


@pytest.mark.parametrize(
    "line",
    # srun's words for tasks that end after the first failure, in the shape of habitat-298's
    # line (made here: the corpus has no such real line yet).
    [
        "srun: error: gpu-3: tasks 8-15: Killed",
        "srun: error: gpu-3: task 2: Exited with exit code 1",
    ],
)
def test_a_launchers_words_for_what_followed_the_first_failure_name_no_peer(line: str) -> None:
    assert peer_of(line) is None


def test_a_declared_marker_replaces_the_builtin_completion_lines() -> None:
    # A trainer that prints a built-in-looking line per epoch declares its own marker instead.
    marker = "ALL EPOCHS DONE"
    per_epoch = "`Trainer.fit` stopped: `max_epochs=1` reached."
    assert MATCHER.match(per_epoch, completion_marker=marker) is None
    found = MATCHER.match(f"2024-01-01 00:00:00 INFO {marker}", completion_marker=marker)
    assert found is not None and found.name == "job_marker"
    oom = MATCHER.match("torch.OutOfMemoryError: CUDA out of memory.", completion_marker=marker)
    assert oom is not None and oom.signal.value == "OOM"
