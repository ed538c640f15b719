"""Sending from a one-shot command (`emit`, `simulate`): delivered, or said to have failed.

A collector spools what Kafka does not take and sends it later: it runs on. A one-shot command
that did the same would exit 0 while nothing was sent, leaving messages for whoever uses the
spool next. Here a command spools in a directory of its own and, if anything is still there
when it is done, removes it and fails; `--spool` asks for the collectors' behaviour instead.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

from schemas.runtime.emitter import Emitter
from schemas.runtime.emitter.settings import EmitterSettings
from schemas.runtime.settings import KafkaSettings


class Undelivered(RuntimeError):
    """Kafka did not take everything a one-shot command sent; it was not kept."""

    def __init__(self, messages: int, bootstrap: str) -> None:
        super().__init__(
            f"Kafka at {bootstrap} did not take {messages} message(s): nothing of them was kept "
            "(`--spool` keeps what Kafka does not take, for the next sender using the spool)"
        )
        self.messages = messages


@contextlib.asynccontextmanager
async def sending(kafka: KafkaSettings, *, spool: bool) -> AsyncIterator[Emitter]:
    """An Emitter for a one-shot command; raises `Undelivered` on leaving when, without
    `spool`, something could not be delivered."""
    if spool:
        async with Emitter(kafka) as emitter:
            yield emitter
        return
    with tempfile.TemporaryDirectory(prefix="centrality-send-") as own:
        emitter = Emitter(kafka, EmitterSettings(spool_dir=Path(own)))
        async with emitter:
            yield emitter
            await emitter.flush()
        left = len(emitter.spool)
    if left:
        raise Undelivered(left, kafka.bootstrap)
