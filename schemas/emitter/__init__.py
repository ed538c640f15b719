"""The Emitter: the one producer of contract events (async, sync, batching, spool)."""

from schemas.emitter.core import Emitter
from schemas.emitter.settings import EmitterSettings
from schemas.emitter.spool import SpoolFullError
from schemas.emitter.sync import SyncEmitter

__all__ = ["Emitter", "EmitterSettings", "SpoolFullError", "SyncEmitter"]
