"""The contract's limits: how long, how many, how large and when. Every field of every event
states one (as a pydantic constraint, so the Emitter, which builds models, and the codec, which
validates them, enforce the same bound, and the JSON Schema files show it). Bounds are chosen so
that everything the contract accepts fits the ClickHouse columns it lands in (see
streams/history/ddl), and a message breaking one is dead-lettered with reason `limit`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

import orjson
from pydantic import (
    AfterValidator,
    AwareDatetime,
    BeforeValidator,
    Field,
    StringConstraints,
    TypeAdapter,
    ValidationError,
)
from pydantic_core import PydanticCustomError
from pydantic_settings import BaseSettings, SettingsConfigDict

# Integer widths of the ClickHouse columns fields land in.
UINT16_MAX = 2**16 - 1
UINT32_MAX = 2**32 - 1
INT32_MAX = 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

# Nodes one event may name. The largest single jobs run on whole machines: Aurora has 10,624
# nodes, Frontier 9,408, and the largest published training runs used 16,384 GPUs (2,048
# nodes of 8); 16,384 nodes covers a full-machine job on any of them with room to spare, while a
# list of that size of realistic host names stays far below the message limit.
MAX_NODES = 16_384
# A host name (and a Kubernetes node name, a DNS subdomain) is at most 253 characters.
NODE_NAME = 253
# Job ids are scheduler-qualified (`k8s/<namespace ≤63>/<name ≤253>`), node ids host names.
SUBJECT = 512
SOURCE = 256
CLUSTER = 128
NAME = 256  # short identifiers: user, queue, rule, check, action, window, scheduler words
WORD = 64  # enum-like words: collective, dtype, throttle reason, GPU UUID
TEXT = 4096  # reasons, messages, errors, URIs and paths (PATH_MAX is 4096)
LOG_LINE = 16_384  # one log line; longer ones are cut by the collector, never by the codec
COMMAND = 16_384
LOG_LINES = 1000  # lines per LogLinesObserved event
SMALL_LIST = 64  # reasons, throttle reasons, benchmark suites
CAUSES = 1024  # events behind one decision
GPUS_PER_NODE = 1024  # GPU index on a node (the columns are UInt16)
MAP_ENTRIES = 64  # raw / details / thresholds mappings
MAP_KEY = 128
MAP_VALUE = 1024
DETAIL_VALUE_BYTES = 4096  # one free-form JSON value of a details mapping, encoded

# Oldest event time the contract accepts; DateTime64(6) columns store 1900..2299, the `hour`
# columns (DateTime) 1970..2106, so a day of skew past now is far inside both.
MIN_TIME = datetime(2000, 1, 1, tzinfo=UTC)


class ContractSettings(BaseSettings):
    """`CENTRALITY_CONTRACT_*`, read once per process, when the first event time is checked: the
    codec must not parse the environment per message, and a clock skew setting does not change
    while a process runs."""

    model_config = SettingsConfigDict(env_prefix="CENTRALITY_CONTRACT_", extra="ignore")

    max_future_skew_s: float = Field(
        default=86_400.0,
        ge=0,
        le=366 * 86_400.0,
        description="How far past the reader's clock an event time may lie (clock skew).",
    )


@functools.cache
def max_future_skew() -> timedelta:
    return timedelta(seconds=ContractSettings().max_future_skew_s)


Str = Annotated[str, StringConstraints(max_length=TEXT)]
Key = Annotated[str, StringConstraints(max_length=MAP_KEY)]
MapValue = Annotated[str, StringConstraints(max_length=MAP_VALUE)]
NodeName = Annotated[str, StringConstraints(min_length=1, max_length=NODE_NAME)]
Nodes = Annotated[tuple[NodeName, ...], Field(max_length=MAX_NODES)]
Word = Annotated[str, StringConstraints(max_length=WORD)]

_LEAP = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:60")
TIME_PATTERN = (
    r"^2\d{3}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d"
    r"(\.\d{1,6})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$"
)
TIME_SCHEMA: dict[str, Any] = {
    "pattern": TIME_PATTERN,
    "formatMinimum": MIN_TIME.isoformat().replace("+00:00", "Z"),
    "x-maxFutureSkewS": ContractSettings.model_fields["max_future_skew_s"].default,
}


class _Horizon:
    """The latest event time accepted, as last computed. It only ever lags the clock, so it is
    stricter than the truth: a time within it is accepted without reading the clock, and only a
    time past it reads the clock again before it is refused. Reading the clock and comparing
    timezone-aware datetimes per timestamp cost more than validating the rest of a GPU sample."""

    __slots__ = ("at", "text")

    def __init__(self) -> None:
        self.at = MIN_TIME
        self.text = ""

    def refresh(self) -> _Horizon:
        self.at = datetime.now(UTC) + max_future_skew()
        self.text = self.at.strftime("%Y-%m-%dT%H:%M:%S")
        return self


_HORIZON = _Horizon()  # refreshed by the first time past 2000: the settings read then
_ANY_TIME: TypeAdapter[datetime] = TypeAdapter(AwareDatetime)


def _leap_second() -> PydanticCustomError:
    return PydanticCustomError(
        "time_limit", "leap seconds are not accepted (ClickHouse cannot store them)"
    )


def _too_late() -> PydanticCustomError:
    return PydanticCustomError(
        "time_limit",
        "more than {skew_s} s in the future (CENTRALITY_CONTRACT_MAX_FUTURE_SKEW_S)",
        {"skew_s": max_future_skew().total_seconds()},
    )


def _not_too_late(value: Any) -> Any:
    """Before pydantic parses a timestamp: no leap second, not past the horizon. The earliest
    time is a native `ge` constraint. The common case, UTC written `…Z` as every producer of ours
    writes it, is compared as text; anything else is parsed here once."""
    if type(value) is str and len(value) >= 20 and value[-1] == "Z" and value[10] == "T":
        if value[17] == "6" and value[18] == "0":
            raise _leap_second()
        second = value[:19]  # to the second: within the same second as the horizon passes
        if second > _HORIZON.text and second > _HORIZON.refresh().text:
            raise _too_late()
        return value
    try:
        moment = _ANY_TIME.validate_python(value)
    except ValidationError:
        if isinstance(value, str) and _LEAP.match(value):
            raise _leap_second() from None
        return value  # the field's own validation reports it
    if moment > _HORIZON.at and moment > _HORIZON.refresh().at:
        raise _too_late()
    return moment


def _in_utc(value: datetime) -> datetime:
    """Every time in `datetime.UTC`: pydantic's own tzinfo answers each comparison and subtraction
    through a Python call, ten times slower, and folds, rules and timers compare times all the
    time. The instant is unchanged; it is written back `…Z`."""
    return value if value.tzinfo is UTC else value.astimezone(UTC)


Timestamp = Annotated[
    AwareDatetime,
    # `ge` first: it then stays a native constraint of the datetime schema, not a Python check.
    Field(
        ge=MIN_TIME,
        description="RFC 3339 with offset and at most microseconds, from 2000-01-01T00:00:00Z "
        "to at most `x-maxFutureSkewS` seconds past the reader's clock (a deployment may change "
        "it: CENTRALITY_CONTRACT_MAX_FUTURE_SKEW_S); no leap second.",
        json_schema_extra=TIME_SCHEMA,
    ),
    BeforeValidator(_not_too_late),
    AfterValidator(_in_utc),
]

# pydantic error types that mean "a limit was broken", as opposed to input of the wrong shape.
LIMIT_ERRORS = frozenset(
    {
        "string_too_long",
        "too_long",
        "less_than",
        "less_than_equal",
        "greater_than",
        "greater_than_equal",
        "finite_number",
        "int_parsing_size",
        "time_limit",
        "size_limit",
    }
)


def _bounded_json(value: Any) -> Any:
    """A free-form value must be JSON (what the wire and the `payload` column hold) and small."""
    try:
        size = len(orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS))
    except TypeError as exc:
        if "64-bit" in str(exc):
            raise PydanticCustomError("size_limit", "an integer beyond 64 bits") from None
        raise PydanticCustomError(
            "json_value", "not a JSON value: {error}", {"error": str(exc)}
        ) from None
    if size > DETAIL_VALUE_BYTES:
        raise PydanticCustomError(
            "size_limit",
            "value is {size} bytes encoded, more than {limit}",
            {"size": size, "limit": DETAIL_VALUE_BYTES},
        )
    return value


# A free-form JSON value of a details mapping, bounded by its encoded size.
DetailValue = Annotated[Any, AfterValidator(_bounded_json)]
Details = Annotated[dict[Key, DetailValue], Field(max_length=MAP_ENTRIES)]


def listed(items: Iterable[str], limit: int = TEXT // 4, sep: str = ", ") -> str:
    """`items` joined, as many as fit in `limit` characters, then "and N more": a decision's
    text names what it can of a big job (thousands of nodes) and stays within its field."""
    items = list(items)
    shown: list[str] = []
    used = 0
    for i, item in enumerate(items):
        rest = len(items) - i - 1
        tail = len(f"{sep}and {rest} more") if rest else 0
        cost = len(item) + (len(sep) if shown else 0)
        if used + cost + tail > limit:
            return sep.join(shown) + f"{sep if shown else ''}and {len(items) - i} more"
        shown.append(item)
        used += cost
    return sep.join(shown)


def capped(text: str, limit: int = TEXT) -> str:
    """`text` cut to `limit` characters, an ellipsis saying so."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
