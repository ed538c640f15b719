"""The Emitter: the one producer of contract events (async, sync, batching, spool)."""

from schemas.runtime.emitter.core import Emitter
from schemas.runtime.emitter.settings import EmitterSettings
from schemas.runtime.emitter.spool import SpoolFullError
from schemas.runtime.emitter.sync import SyncEmitter

__all__ = ["Emitter", "EmitterSettings", "SpoolFullError", "SyncEmitter"]
