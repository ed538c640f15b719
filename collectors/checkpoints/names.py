"""What the checkpoints of common trainers are called, and when one is complete.

- Lightning and NeMo (`ModelCheckpoint`): `epoch=3-step=1200.ckpt`,
  `megatron_gpt--val_loss=2.34-step=1000-consumed_samples=8000.0-last.ckpt`; NeMo leaves a
  `<name>-unfinished` marker beside a checkpoint while it is being written.
- Hugging Face Trainer: `checkpoint-500/`; Ray Train: `checkpoint_000006/`.
- torch DCP (torchtitan `step-10/`): shards `__0_0.distcp`, and `.metadata` written last.
- Megatron-LM: `iter_0001000/`, complete once `latest_checkpointed_iteration.txt` names it.
- `global_step1000/` (DeepSpeed) and `global_step_1000/`.

`last.ckpt` and names without a step are not recognised: a step is what a restart resumes at.
"""

from __future__ import annotations

import os
import re

_STEP = re.compile(
    r"(?:^|[-_])step=(?P<lightning>\d+)(?=[-_.]|$)"
    r"|^checkpoint[-_](?P<numbered>\d+)(?:\.\w+)?$"
    r"|^step[-_](?P<dcp>\d+)(?:\.\w+)?$"
    r"|^iter_(?P<megatron>\d+)$"
    r"|^global_step_?(?P<deepspeed>\d+)(?:\.\w+)?$"
)

NEMO_UNFINISHED = "-unfinished"
MEGATRON_TRACKER = "latest_checkpointed_iteration.txt"
DCP_METADATA = ".metadata"
DCP_SHARD_SUFFIX = ".distcp"


def step_of(name: str) -> int | None:
    """The step a checkpoint entry's name carries; None where it names no checkpoint."""
    if name.endswith(NEMO_UNFINISHED):
        return None
    m = _STEP.search(name)
    if m is None:
        return None
    return int(next(v for v in m.groupdict().values() if v is not None))


def is_megatron(name: str) -> bool:
    return name.startswith("iter_")


def megatron_tracked(base: str) -> str | None:
    """The `iter_…` directory Megatron's tracker names in `base` (None: no tracker, or it
    names the `release` checkpoint, which carries no step)."""
    try:
        with open(os.path.join(base, MEGATRON_TRACKER)) as f:
            text = f.read().strip()
    except OSError:
        return None
    return f"iter_{int(text):07d}" if text.isdigit() else None


def unfinished(path: str) -> bool:
    """NeMo is still writing this checkpoint (its marker sits beside it)."""
    stem = path.removesuffix(".ckpt").removesuffix("-EMA")
    return os.path.exists(stem + NEMO_UNFINISHED)


def dcp_state(path: str) -> bool | None:
    """For a torch DCP directory: whether its `.metadata` (written last) is there. None for
    anything that is not a DCP checkpoint."""
    try:
        names = os.listdir(path)
    except OSError:
        return None
    if DCP_METADATA in names:
        return True
    if any(n.endswith(DCP_SHARD_SUFFIX) for n in names):
        return False
    return None
