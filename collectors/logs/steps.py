"""Step (iteration) times in the lines the common trainers print, read after launcher prefixes.

One reader per line format, tried in order; each has keywords that any line it reads contains,
so a line with none of them (most lines) costs one search. The formats:

- JAX/MaxText: `completed step: 10, seconds: 1.234, TFLOP/s/device: …`;
- Megatron-LM (and Megatron-DeepSpeed, GPT-NeoX): `iteration 100/ 500000 | … | elapsed time per
  iteration (ms): 1234.5 | …`;
- DeepSpeed's pipeline engine: `steps: 30 loss: 10.7133 iter time (s): 0.283 samples/sec: …`;
- NeMo (which trains through Lightning): `train_step_timing in s=0.615` in its progress bar, and
  NeMo 2's `… | global_step: 120 | … | train_step_timing in s: 0.03146 | …`;
- PyTorch Lightning's progress bar, `Epoch 0:  45%|…| 450/1000 [01:23<01:42,  5.39it/s, …]`;
- Hugging Face Trainer's progress bar, the same bar without a description: `  4%|…| 13/345
  [00:07<05:03,  1.09it/s]`.

A bar's rate is tqdm's moving average of recent steps, not one step's time; it is what the bar
says. Lightning before 2.0 counted validation batches in its epoch bar too, so while it validates
that bar's rate is validation's: the median of an interval outweighs it. Bars that are not training
(`Validation DataLoader 0:`, `Sanity Checking`, `Map:`, `Loading checkpoint shards:`) have a
description other than `Epoch N:`, or a unit other than `it`, and are not read. Not read either,
because they time part of a step or no step: DeepSpeed's `time (ms) | forward: … | step: …`
breakdown (its `step` is the optimizer's), its `SamplesPerSec` throughput (the batch size is not on
the line), and the Trainer's closing `{'train_runtime': …, 'train_steps_per_second': …}` (one
average over the whole run, printed once at its end: it says nothing of the pace of the last
interval).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from schemas.events.steps import STEP_S_MAX, Trainer
from schemas.limits import INT64_MAX


@dataclass(frozen=True)
class StepTime:
    trainer: Trainer
    step: int | None  # the step as the line numbers it; None where it numbers none exactly
    seconds: float


_NUMBER = r"\d+(?:\.\d+)?"
# tqdm's `{n}/{total} [{elapsed}<{remaining}, {rate}{unit}{postfix}]`, or `{n}it [{elapsed}, …`
# where the total is unknown; a rate of `?it/s` (nothing measured yet) is no time.
_INTERVAL = r"\d+(?::\d\d){1,2}"
_BAR = (
    rf"(?P<n>\d+)(?:/(?:\d+|\?)|it) \[{_INTERVAL}(?:<(?:{_INTERVAL}|\?))?, *"
    rf"(?P<rate>{_NUMBER})(?P<unit>it/s|s/it)"
)
# Lightning shows its logged metrics in the bar rounded to three significant digits: a global
# step written with an exponent (`9e+3`, `1.63e+6`) is not the exact step, so only a plain one
# is read.
_GLOBAL_STEP = re.compile(r"\bglobal_step[=:] ?(\d+)(?:\.0)?(?=[,|\] ]|$)")
_ITERATION = re.compile(r"\biteration\s+(\d+)\s*/\s*\d+")
_INT64_DIGITS = len(str(INT64_MAX))


def _step(text: str | None) -> int | None:
    # Checked on the digits first: `int` refuses a number of thousands of digits.
    if text is None or len(text) > _INT64_DIGITS or int(text) > INT64_MAX:
        return None
    return int(text)


def _step_in(regex: re.Pattern[str], line: str) -> int | None:
    found = regex.search(line)
    return _step(found[1]) if found else None


def _bar(m: re.Match[str], line: str) -> tuple[int | None, float | None]:
    rate = float(m["rate"])
    seconds = rate if m["unit"] == "s/it" else (1 / rate if rate else None)
    return _step_in(_GLOBAL_STEP, line), seconds


def _hf(m: re.Match[str], line: str) -> tuple[int | None, float | None]:
    # The Trainer's bar counts optimizer steps over the whole run: its count is the step.
    return _step(m["n"]), _bar(m, line)[1]


def _nemo(m: re.Match[str], line: str) -> tuple[int | None, float | None]:
    return _step_in(_GLOBAL_STEP, line), float(m[1])


def _megatron(m: re.Match[str], line: str) -> tuple[int | None, float | None]:
    return _step_in(_ITERATION, line), float(m[1]) / 1000


def _step_and_seconds(m: re.Match[str], line: str) -> tuple[int | None, float | None]:
    return _step(m[1]), float(m[2])


@dataclass(frozen=True)
class Reader:
    trainer: Trainer
    keywords: tuple[str, ...]  # every line `regex` matches contains one of them
    regex: re.Pattern[str]
    # the step (None: not on the line) and the seconds (None: not a usable time) of a match
    read: Callable[[re.Match[str], str], tuple[int | None, float | None]]


# In order: the first reader that matches a line reads it. A trainer's own step timer comes
# before a progress bar on the same line (NeMo's bar carries both).
READERS: tuple[Reader, ...] = (
    Reader(
        "maxtext",
        ("completed step: ",),
        re.compile(rf"\bcompleted step: (\d+), seconds: ({_NUMBER})"),
        _step_and_seconds,
    ),
    Reader(
        "megatron",
        ("elapsed time per iteration (ms): ",),
        re.compile(rf"\belapsed time per iteration \(ms\): ({_NUMBER})"),
        _megatron,
    ),
    Reader(
        # DeepSpeed before 0.6.5 printed milliseconds under this `(s)` (its PR 1934): such a
        # run's times are a thousand times too long, alike on every rank.
        "deepspeed",
        ("iter time (s): ",),
        re.compile(rf"^steps?: *(\d+)(?: */ *\d+)? .*?\biter time \(s\): ({_NUMBER})"),
        _step_and_seconds,
    ),
    Reader(
        "lightning",
        ("train_step_timing",),
        re.compile(rf"\btrain_step_timing(?: in s)?[=:] ?({_NUMBER}(?:e[-+]?\d+)?)"),
        _nemo,
    ),
    # Lightning's count restarts every epoch: it is no step number; NeMo's bar shows its
    # `global_step`.
    Reader("lightning", ("it/s", "s/it"), re.compile(rf"^Epoch \d+:[^\[]*?{_BAR}"), _bar),
    Reader("hf", ("it/s", "s/it"), re.compile(rf"^ *\d{{1,3}}%[^\[]*?{_BAR}"), _hf),
)

_KEYWORDS = dict.fromkeys(k for reader in READERS for k in reader.keywords)
_ANY_KEYWORD = re.compile("|".join(map(re.escape, _KEYWORDS)))
# tqdm draws a second bar (an evaluation's under the training's) one line down and moves the
# cursor back up after it: a drawing that holds that move is a nested bar, never the training's.
_CURSOR_UP = "\x1b[A"


def step_time(body: str) -> StepTime | None:
    """The step time `body` (a line after its launcher prefixes) reports, if it reports one."""
    if _ANY_KEYWORD.search(body) is None:
        return None
    # tqdm redraws its bar after a carriage return, so a log file holds many drawings on one
    # line; the last one that reads is the newest.
    for drawing in reversed(body.split("\r")):
        if _CURSOR_UP not in drawing and (found := _read(drawing)) is not None:
            return found
    return None


def _read(text: str) -> StepTime | None:
    for reader in READERS:
        if not any(k in text for k in reader.keywords):
            continue
        m = reader.regex.search(text)
        if m is None:
            continue
        step, seconds = reader.read(m, text)
        if seconds is not None and 0 < seconds <= STEP_S_MAX:
            return StepTime(reader.trainer, step, seconds)
    return None
