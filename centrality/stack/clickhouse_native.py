"""ClickHouse's Native format at the client's protocol revision, and its compressed-block framing.

chDB writes Native as ClickHouse does for revision 0 (plain HTTP without `client_protocol_version`)
and offers no way to ask for another revision. Clients that speak Native over HTTP (clickhouse-go,
hence Grafana's plugin) send `client_protocol_version` and read blocks as a TCP client of that
revision would: a BlockInfo before each block, and from revision 54454 a serialization-kind flag
per column. So the revision-0 stream is re-framed here. Column data is the same bytes at every
revision, but where it ends can only be found by walking it, which needs each type's layout.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import lz4.block  # type: ignore[import-untyped]
from backports import zstd

from centrality.stack.clickhouse_http import ClickHouseError, block_checksum

# src/Core/ProtocolDefines.h
REVISION_WITH_TIME_ZONE_IN_DATETIME = 54337
REVISION_WITH_LOW_CARDINALITY = 54405
REVISION_WITH_CUSTOM_SERIALIZATION = 54454
REVISION_WITH_OUT_OF_ORDER_BUCKETS = 54480

# BlockInfo (src/Core/BlockInfo.cpp): numbered fields, then 0. Field 1 is_overflows (false),
# field 2 bucket_num (-1), from 54480 field 3 out_of_order_buckets (an empty list).
_BLOCK_INFO = b"\x01\x00\x02\xff\xff\xff\xff"
_OUT_OF_ORDER_BUCKETS = b"\x03\x00"

_FIXED = {
    "UInt8": 1, "Int8": 1, "Bool": 1, "Enum8": 1, "Nothing": 1,
    "UInt16": 2, "Int16": 2, "Date": 2, "Enum16": 2, "BFloat16": 2,
    "UInt32": 4, "Int32": 4, "Float32": 4, "Date32": 4, "DateTime": 4, "IPv4": 4, "Decimal32": 4,
    "Time": 4,
    "UInt64": 8, "Int64": 8, "Float64": 8, "DateTime64": 8, "Decimal64": 8, "Time64": 8,
    "UInt128": 16, "Int128": 16, "UUID": 16, "IPv6": 16, "Decimal128": 16,
    "UInt256": 32, "Int256": 32, "Decimal256": 32,
    "IntervalNanosecond": 8, "IntervalMicrosecond": 8, "IntervalMillisecond": 8,
    "IntervalSecond": 8, "IntervalMinute": 8, "IntervalHour": 8, "IntervalDay": 8,
    "IntervalWeek": 8, "IntervalMonth": 8, "IntervalQuarter": 8, "IntervalYear": 8,
}  # fmt: skip
# Types that are another type on the wire.
_ALIASES = {
    "Point": "Tuple(Float64, Float64)",
    "Ring": "Array(Tuple(Float64, Float64))",
    "LineString": "Array(Tuple(Float64, Float64))",
    "Polygon": "Array(Array(Tuple(Float64, Float64)))",
    "MultiLineString": "Array(Array(Tuple(Float64, Float64)))",
    "MultiPolygon": "Array(Array(Array(Tuple(Float64, Float64))))",
}
_U64 = struct.Struct("<Q")
_NAME_AND_TYPE = re.compile(r"^(`(?:[^`\\]|\\.)*`|[A-Za-z_][A-Za-z0-9_]*)\s+(\S.*)$", re.DOTALL)
_LC_KEY_SIZES = (1, 2, 4, 8)
_LC_HAS_ADDITIONAL_KEYS = 1 << 9


@dataclass(frozen=True)
class _Type:
    name: str
    args: tuple[str, ...]


def _parse_type(text: str) -> _Type:
    text = text.strip()
    text = _ALIASES.get(text, text)
    paren = text.find("(")
    if paren < 0:
        return _Type(text, ())
    if not text.endswith(")"):
        raise _unsupported(text)
    return _Type(text[:paren], tuple(_split_args(text[paren + 1 : -1])))


def _split_args(inner: str) -> Iterator[str]:
    depth, start, quote = 0, 0, ""
    i = 0
    while i < len(inner):
        ch = inner[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'`\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            yield inner[start:i].strip()
            start = i + 1
        i += 1
    yield inner[start:].strip()


def _element_type(arg: str) -> str:
    """A Tuple element is `Type` or `name Type`."""
    if arg.startswith("`") or "(" not in arg.split(" ", 1)[0]:
        match = _NAME_AND_TYPE.match(arg)
        if match is not None:
            return match.group(2)
    return arg


def _unsupported(type_name: str) -> ClickHouseError:
    return ClickHouseError.make(
        48,
        "NOT_IMPLEMENTED",
        f"Native output of type {type_name} at a client_protocol_version above 0 is not "
        "supported by this server; ask without client_protocol_version",
    )


class _Reader:
    def __init__(self, buf: bytes, pos: int = 0) -> None:
        self.buf = buf
        self.pos = pos

    def varint(self) -> int:
        result, shift, buf, pos = 0, 0, self.buf, self.pos
        while True:
            if pos >= len(buf):
                raise _truncated()
            byte = buf[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                self.pos = pos
                return result
            shift += 7

    def skip(self, n: int) -> None:
        if self.pos + n > len(self.buf):
            raise _truncated()
        self.pos += n

    def u64(self) -> int:
        if self.pos + 8 > len(self.buf):
            raise _truncated()
        (value,) = _U64.unpack_from(self.buf, self.pos)
        self.pos += 8
        return int(value)

    def string(self) -> str:
        n = self.varint()
        start = self.pos
        self.skip(n)
        return self.buf[start : self.pos].decode()


def _truncated() -> ClickHouseError:
    return ClickHouseError.make(33, "CANNOT_READ_ALL_DATA", "Truncated Native block from engine")


def _skip_prefix(t: _Type, r: _Reader) -> None:
    """Bulk state prefixes come first, for the whole column tree (ISerialization)."""
    if t.name == "LowCardinality":
        r.skip(8)  # keys serialization version
    elif t.name in ("Array", "Nullable", "SimpleAggregateFunction"):
        _skip_prefix(_parse_type(t.args[-1]), r)
    elif t.name == "Map":
        for arg in t.args:
            _skip_prefix(_parse_type(arg), r)
    elif t.name == "Tuple":
        for arg in t.args:
            _skip_prefix(_parse_type(_element_type(arg)), r)


def _skip_data(t: _Type, rows: int, r: _Reader) -> None:
    size = _FIXED.get(t.name)
    if size is not None:
        r.skip(size * rows)
    elif t.name == "String":
        _skip_strings(r, rows)
    elif t.name == "FixedString":
        r.skip(int(t.args[0]) * rows)
    elif t.name == "Decimal":
        precision = int(t.args[0])
        width = 4 if precision <= 9 else 8 if precision <= 18 else 16 if precision <= 38 else 32
        r.skip(rows * width)
    elif t.name == "Nullable":
        r.skip(rows)
        _skip_data(_parse_type(t.args[0]), rows, r)
    elif t.name == "SimpleAggregateFunction":
        _skip_data(_parse_type(t.args[-1]), rows, r)
    elif t.name in ("Array", "Map"):
        _skip_offsets_and(t, rows, r)
    elif t.name == "Tuple":
        for arg in t.args:
            _skip_data(_parse_type(_element_type(arg)), rows, r)
    elif t.name == "LowCardinality":
        _skip_low_cardinality(_parse_type(t.args[0]), rows, r)
    else:
        raise _unsupported(t.name)


def _skip_strings(r: _Reader, rows: int) -> None:
    # The hot loop of big results: most strings are shorter than 128 bytes, a one-byte length.
    buf, pos = r.buf, r.pos
    try:
        for _ in range(rows):
            n = buf[pos]
            if n < 0x80:
                pos += n + 1
            else:
                r.pos = pos
                n = r.varint()
                pos = r.pos + n
    except IndexError:
        raise _truncated() from None
    if pos > len(buf):
        raise _truncated()
    r.pos = pos


def _skip_offsets_and(t: _Type, rows: int, r: _Reader) -> None:
    last = 0
    if rows:
        r.skip(8 * (rows - 1))
        last = r.u64()
    for arg in t.args:
        _skip_data(_parse_type(arg), last, r)


def _skip_low_cardinality(inner: _Type, rows: int, r: _Reader) -> None:
    # The dictionary holds the non-nullable type; NULL is its key 0.
    keys_type = _parse_type(inner.args[0]) if inner.name == "Nullable" else inner
    done = 0
    while done < rows:
        flags = r.u64()
        if flags & _LC_HAS_ADDITIONAL_KEYS:
            _skip_data(keys_type, r.u64(), r)
        count = r.u64()
        if flags & 0xFF >= len(_LC_KEY_SIZES):
            raise _truncated()
        r.skip(count * _LC_KEY_SIZES[flags & 0xFF])
        done += count


def reencode(
    body: bytes, revision: int, type_name: Callable[[int, str], str] | None = None
) -> bytes:
    """Revision-0 Native from the engine, as ClickHouse writes it for a client of `revision`.

    `type_name(i, engine_type)` can restore column i's type name: for revision 0 ClickHouse
    drops a DateTime's time zone, which clients of revision 54337 and later expect.
    """
    if revision <= 0 or not body:
        return body
    block_info = _BLOCK_INFO
    if revision >= REVISION_WITH_OUT_OF_ORDER_BUCKETS:
        block_info += _OUT_OF_ORDER_BUCKETS
    block_info += b"\x00"
    r = _Reader(body)
    out: list[bytes] = []
    while r.pos < len(body):
        out.append(block_info)
        start = r.pos
        columns = r.varint()
        rows = r.varint()
        out.append(body[start : r.pos])
        for i in range(columns):
            start = r.pos
            r.string()
            out.append(body[start : r.pos])
            engine_type = r.string()
            if revision < REVISION_WITH_LOW_CARDINALITY and "LowCardinality(" in engine_type:
                # ClickHouse would expand the dictionary for such old clients; nobody asks.
                raise ClickHouseError.make(
                    48,
                    "NOT_IMPLEMENTED",
                    f"LowCardinality for client_protocol_version {revision}; use 0 or "
                    f"{REVISION_WITH_LOW_CARDINALITY} and above",
                )
            name = type_name(i, engine_type) if type_name else engine_type
            encoded = name.encode()
            out.append(_varint(len(encoded)) + encoded)
            if revision >= REVISION_WITH_CUSTOM_SERIALIZATION:
                # The engine wrote for revision 0, which has no sparse or other custom
                # serializations: every column is in its default one at any revision.
                out.append(b"\x00")
            start = r.pos
            if rows:
                t = _parse_type(engine_type)
                _skip_prefix(t, r)
                _skip_data(t, rows, r)
            out.append(body[start : r.pos])
    return b"".join(out)


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


# --- compressed blocks (`compress=1`) ---------------------------------------------------------

METHOD_NONE = 0x02
METHOD_LZ4 = 0x82
METHOD_ZSTD = 0x90
_METHODS = {"lz4": METHOD_LZ4, "lz4hc": METHOD_LZ4, "zstd": METHOD_ZSTD, "none": METHOD_NONE}
_HEADER = struct.Struct("<BII")
# ClickHouse's CompressedWriteBuffer compresses each 1 MiB of output as one block.
_BLOCK_SIZE = 1 << 20


def compression_method(name: str | None) -> int:
    """`network_compression_method` as ClickHouse reads it (default LZ4)."""
    method = _METHODS.get((name or "lz4").strip().lower())
    if method is None:
        raise ClickHouseError.make(36, "BAD_ARGUMENTS", f"Unknown compression method: {name}")
    return method


def encode_compressed_blocks(body: bytes, method: int = METHOD_LZ4, zstd_level: int = 1) -> bytes:
    """ClickHouse's compressed-block framing: CityHash128 checksum, method, sizes, payload."""
    out: list[bytes] = []
    for pos in range(0, len(body), _BLOCK_SIZE):
        plain = body[pos : pos + _BLOCK_SIZE]
        if method == METHOD_LZ4:
            payload = lz4.block.compress(plain, store_size=False)
        elif method == METHOD_ZSTD:
            payload = zstd.compress(plain, level=zstd_level)
        else:
            payload = plain
        framed = _HEADER.pack(method, _HEADER.size + len(payload), len(plain)) + payload
        out.append(block_checksum(framed))
        out.append(framed)
    return b"".join(out)
