"""Thin callbacks for Hugging Face Trainer and PyTorch Lightning, where those are installed.

Each derives from its framework's callback base when the framework imports, from `object`
otherwise (so this module imports everywhere and the callbacks are testable with fakes).
Only rank 0 announces, and each checkpoint once.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import Any

from collectors.checkpoints.notify import notify_checkpoint

Notify = Callable[..., Any]


def _base(*candidates: tuple[str, str]) -> Any:
    for module, name in candidates:
        try:
            return getattr(importlib.import_module(module), name)
        except ImportError:
            continue
    return object


_TrainerCallback: Any = _base(("transformers", "TrainerCallback"))
_LightningCallback: Any = _base(
    ("lightning.pytorch.callbacks", "Callback"), ("pytorch_lightning.callbacks", "Callback")
)


class CentralityTrainerCallback(_TrainerCallback):  # type: ignore[misc]
    """`Trainer(callbacks=[CentralityTrainerCallback()])`: announces each `checkpoint-N`."""

    def __init__(self, job: str | None = None, notify: Notify = notify_checkpoint) -> None:
        super().__init__()
        self.job = job
        self.notify = notify

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        if getattr(state, "is_world_process_zero", True):
            step = int(state.global_step)
            uri = os.path.join(args.output_dir, f"checkpoint-{step}")
            epoch = int(state.epoch) if state.epoch is not None else None
            self.notify(self.job, step, uri, epoch=epoch)
        return control


class CentralityLightningCallback(_LightningCallback):  # type: ignore[misc]
    """`Trainer(callbacks=[CentralityLightningCallback()])`: announces files ModelCheckpoint wrote.

    Lightning's save hook runs before the file is written, so new paths are picked up from the
    checkpoint callbacks at the next batch or validation end, when they are on disk.
    """

    def __init__(self, job: str | None = None, notify: Notify = notify_checkpoint) -> None:
        super().__init__()
        self.job = job
        self.notify = notify
        self._announced: set[str] = set()

    def on_train_batch_end(self, trainer: Any, *args: Any, **kwargs: Any) -> None:
        self._announce_new(trainer)

    def on_validation_end(self, trainer: Any, *args: Any, **kwargs: Any) -> None:
        self._announce_new(trainer)

    def on_train_end(self, trainer: Any, *args: Any, **kwargs: Any) -> None:
        self._announce_new(trainer)

    def _announce_new(self, trainer: Any) -> None:
        if not getattr(trainer, "is_global_zero", True):
            return
        for callback in getattr(trainer, "checkpoint_callbacks", ()):
            paths = {
                *getattr(callback, "best_k_models", {}),
                getattr(callback, "last_model_path", ""),
            }
            for path in sorted(p for p in paths if p and p not in self._announced):
                if os.path.exists(path):
                    self._announced.add(path)
                    self.notify(
                        self.job, int(trainer.global_step), path, epoch=int(trainer.current_epoch)
                    )
