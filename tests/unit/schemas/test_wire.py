import faust

import schemas.runtime.faust_codec  # noqa: F401  (registers the codec)
from schemas.codec import encode, encode_batch
from schemas.runtime.wire import deserialize, serialize
from streams.testing import checkpoint
from tests.factories import exited


def test_deserializer_returns_events_or_the_error_never_raises() -> None:
    good = deserialize(encode(exited()))
    assert good.ok and good.events[0].type == "JobExited"
    bad = deserialize(b"\xff\xfe")
    assert not bad.ok and bad.error is not None and bad.error.reason == "malformed"
    assert bad.raw == b"\xff\xfe"
    assert deserialize(None).error is not None


def test_serializer_takes_one_event_or_a_batch() -> None:
    e1, e2 = checkpoint(1), checkpoint(2)
    assert serialize(e1) == encode(e1)
    assert serialize([e1, e2]) == encode_batch([e1, e2])


def test_faust_codec_is_registered_and_round_trips() -> None:
    from faust.serializers import codecs

    codec = codecs.get_codec("centrality")
    events = [checkpoint(1), checkpoint(2)]
    decoded = codec.loads(codec.dumps(events))
    assert decoded.events == events
    assert not codec.loads(b"{").ok
    assert faust.Schema(value_serializer="centrality").value_serializer == "centrality"
