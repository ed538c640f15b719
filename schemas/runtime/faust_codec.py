"""A Faust codec for rule authors' own Faust apps: `value_serializer="centrality"`.

Values decode to `schemas.runtime.wire.Decoded` (events, or the error with the raw bytes), so an
agent can dead-letter bad input instead of Faust skipping it silently. Import this module to
register it.
"""

from __future__ import annotations

from typing import Any

from faust.serializers import codecs

from schemas.runtime.wire import deserialize, serialize


class EventCodec(codecs.Codec):
    def _dumps(self, obj: Any) -> bytes:
        return serialize(obj)

    def _loads(self, s: bytes) -> Any:
        return deserialize(s)


codecs.register("centrality", EventCodec())
