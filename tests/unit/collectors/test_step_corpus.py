"""Step times read from lines of the common trainers' logs, taken from real public sources.

Each case in tests/fixtures/realworld/logs/steps.yaml carries the trainer, step and time written
by hand (or no trainer: the line reports no step time); PROVENANCE.md beside it says where every
line comes from.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from collectors.logs.prefixes import read_prefix
from collectors.logs.steps import StepTime, step_time

CORPUS = Path(__file__).parents[2] / "fixtures" / "realworld" / "logs"
CASES: list[dict[str, Any]] = yaml.safe_load((CORPUS / "steps.yaml").read_text())


def test_every_family_has_real_lines_both_ways_and_every_source_is_documented() -> None:
    provenance = (CORPUS / "PROVENANCE.md").read_text()
    for case in CASES:
        assert f"`{case['source']}`" in provenance, case["source"]
    real = Counter(c["trainer"] for c in CASES if c["trainer"] and not c.get("composed"))
    assert min(real[t] for t in ("lightning", "megatron", "deepspeed", "hf", "maxtext")) >= 5
    assert sum(c["trainer"] is None for c in CASES) >= 15


def reading(found: StepTime | None) -> tuple[str, int | None, float] | None:
    return None if found is None else (found.trainer, found.step, found.seconds)


def expected(case: dict[str, Any]) -> tuple[str, int | None, Any] | None:
    if case["trainer"] is None:
        return None
    seconds = case["seconds"] if "seconds" in case else 1 / case["per_second"]
    return case["trainer"], case["step"], pytest.approx(seconds, rel=1e-9)


@pytest.mark.parametrize("case", CASES, ids=[f"{i}-{c['source']}" for i, c in enumerate(CASES)])
def test_step_time_of_a_real_line(case: dict[str, Any]) -> None:
    assert reading(step_time(read_prefix(case["line"]).body)) == expected(case)


# Made here, in the shape of the corpus' Lightning and Trainer bars.
BAR = "Epoch 3:  40%|████      | 400/1000 [02:00<03:00,  3.33it/s, loss=2.1, v_num=7]"
EARLIER = "Epoch 3:  40%|███▉      | 399/1000 [01:59<03:00,  2.50it/s, loss=2.1, v_num=7]"
VALIDATION = "Validation DataLoader 0:  50%|█████     | 10/20 [00:01<00:01,  9.71it/s]"
NESTED = " 50%|█████     | 10/20 [00:01<00:01,  9.71it/s]\x1b[A"


def is_bar(found: StepTime | None) -> bool:
    return found is not None and found.seconds == pytest.approx(1 / 3.33)


def test_the_newest_drawing_of_a_bar_redrawn_on_one_line_is_read() -> None:
    # In a log file tqdm's redraws follow carriage returns: one line holds every drawing.
    assert is_bar(step_time(f"\r{EARLIER}\r{BAR}"))
    assert is_bar(step_time(f"\r{BAR}\r{VALIDATION}"))  # the validation bar's is not read


def test_a_nested_bar_is_not_the_training_bar() -> None:
    # tqdm draws a second bar one line down and moves the cursor back up after it (`ESC[A`):
    # an evaluation's, even without a description (the Trainer's evaluation bar has none).
    assert step_time(f"\r{NESTED}") is None
    assert is_bar(step_time(f"\r{BAR}\r{NESTED}"))


@pytest.mark.parametrize(
    "body",
    [
        "completed step: 12, seconds: 0.000, TFLOP/s/device: 1.0",  # nothing measured
        "steps: 10 loss: 1.0 iter time (s): 100000.0 samples/sec: 0.001",  # past the contract
        "Epoch 0:  10%|█         | 1/10 [00:01<00:09,  0.00it/s]",
    ],
)
def test_a_time_the_contract_cannot_carry_is_no_step_time(body: str) -> None:
    assert step_time(body) is None
