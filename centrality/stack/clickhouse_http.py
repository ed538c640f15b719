"""The ClickHouse HTTP protocol, minus the socket: bodies, compression, credentials, errors.

Everything here is a pure function of bytes and strings so that the server loop stays a thin
adapter, and the protocol details (which clickhouse-connect, curl and Grafana rely on) are in one
place.
"""

from __future__ import annotations

import base64
import gzip
import re
import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from email import policy
from email.message import Message
from email.parser import BytesParser

import cramjam
import lz4.block  # type: ignore[import-untyped]
import lz4.frame  # type: ignore[import-untyped]
from backports import zstd
from clickhouse_cityhash.cityhash import CityHash128  # type: ignore[import-untyped]

# Request parameters the HTTP layer consumes itself; everything else that is not a `param_*`
# is a query-level setting, as on a real server.
TRANSPORT_PARAMS = frozenset(
    {
        "query",
        "database",
        "default_format",
        "user",
        "password",
        "quota_key",
        "query_id",
        "session_id",
        "session_timeout",
        "session_check",
        "compress",
        "decompress",
        "buffer_size",
        "wait_end_of_query",
        "client_protocol_version",
        "role",
        "enable_http_compression",
        "http_zlib_compression_level",
        "send_progress_in_http_headers",
        "http_headers_progress_interval_ms",
        "add_http_cors_header",
        "http_response_buffer_size",
        "stacktrace",
        "network_compression_method",
        "network_zstd_compression_level",
    }
)

_SETTING_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TRAILING_FORMAT = re.compile(r"\bFORMAT\s+([A-Za-z0-9_]+)\s*;?\s*$", re.IGNORECASE)
_CODE_NAME = re.compile(r"^Code: (\d+)\.(?:.*)\(([A-Z0-9_]+)\)", re.DOTALL)
_CHDB_PREFIX = re.compile(r"^.*?(?=Code: \d+\.)", re.DOTALL)

# ClickHouse's HTTPHandler maps exception codes to statuses; clients (and people reading curl
# output) tell "your SQL is wrong" from "the server broke" by them.
_BAD_REQUEST = frozenset(
    {
        "SYNTAX_ERROR",
        "CANNOT_PARSE_TEXT",
        "CANNOT_PARSE_ESCAPE_SEQUENCE",
        "CANNOT_PARSE_QUOTED_STRING",
        "CANNOT_PARSE_INPUT_ASSERTION_FAILED",
        "CANNOT_PARSE_DATE",
        "CANNOT_PARSE_DATETIME",
        "CANNOT_PARSE_NUMBER",
        "CANNOT_PARSE_UUID",
        "CANNOT_PARSE_DOMAIN_VALUE_FROM_STRING",
        "CANNOT_PARSE_IPV4",
        "CANNOT_PARSE_IPV6",
        "CANNOT_PARSE_BOOL",
        "CANNOT_READ_ALL_DATA",
        "INCORRECT_DATA",
        "UNKNOWN_ELEMENT_IN_AST",
        "UNKNOWN_TYPE_OF_AST_NODE",
        "TOO_DEEP_AST",
        "TOO_BIG_AST",
        "UNEXPECTED_AST_STRUCTURE",
        "VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE",
        "BAD_QUERY_PARAMETER",
        "UNKNOWN_QUERY_PARAMETER",
        "EMPTY_QUERY",
        "HTTP_LENGTH_REQUIRED",
    }
)
_NOT_FOUND = frozenset(
    {
        "UNKNOWN_TABLE",
        "UNKNOWN_FUNCTION",
        "UNKNOWN_IDENTIFIER",
        "UNKNOWN_TYPE",
        "UNKNOWN_STORAGE",
        "UNKNOWN_DATABASE",
        "UNKNOWN_SETTING",
        "UNKNOWN_DIRECTION_OF_SORTING",
        "UNKNOWN_AGGREGATE_FUNCTION",
        "UNKNOWN_FORMAT",
        "UNKNOWN_DATABASE_ENGINE",
        "UNKNOWN_TYPE_OF_QUERY",
        "UNKNOWN_ROLE",
    }
)
_STATUS_BY_NAME = {
    "REQUIRED_PASSWORD": 401,
    "UNKNOWN_USER": 403,
    "WRONG_PASSWORD": 403,
    "AUTHENTICATION_FAILED": 403,
    "ACCESS_DENIED": 403,
    "READONLY": 403,
    "QUERY_IS_TOO_LARGE": 413,
    "NOT_IMPLEMENTED": 501,
    "SOCKET_TIMEOUT": 503,
    "CANNOT_OPEN_FILE": 503,
    "TIMEOUT_EXCEEDED": 408,
}


class ClickHouseError(Exception):
    """A ClickHouse exception as the server reports it: numeric code, symbolic name, text."""

    def __init__(self, code: int, name: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.name = name
        self.message = message

    @classmethod
    def make(cls, code: int, name: str, text: str) -> ClickHouseError:
        return cls(code, name, f"Code: {code}. DB::Exception: {text}. ({name})")

    @classmethod
    def from_engine(cls, exc: BaseException) -> ClickHouseError:
        """chDB raises RuntimeError whose text holds the server's message, sometimes prefixed."""
        text = _CHDB_PREFIX.sub("", str(exc), count=1).strip()
        match = _CODE_NAME.match(text)
        if match is None:
            return cls.make(1001, "STD_EXCEPTION", text or type(exc).__name__)
        return cls(int(match.group(1)), match.group(2), text)

    @property
    def http_status(self) -> int:
        if self.name in _BAD_REQUEST:
            return 400
        if self.name in _NOT_FOUND:
            return 404
        return _STATUS_BY_NAME.get(self.name, 500)

    def body(self, version: str) -> bytes:
        text = (
            self.message if "(version " in self.message else f"{self.message} (version {version})"
        )
        return (text + "\n").encode()


def bad_request(text: str) -> ClickHouseError:
    return ClickHouseError.make(36, "BAD_ARGUMENTS", text)


# --- request bodies ---------------------------------------------------------------------------


def decode_content(body: bytes, encoding: str | None) -> bytes:
    """Undo `Content-Encoding`; streaming clients send several frames back to back."""
    enc = (encoding or "").strip().lower()
    if enc in ("", "identity", "none"):
        return body
    try:
        if enc == "lz4":
            return _lz4_frames(body)
        if enc == "zstd":
            return zstd.decompress(body)
        if enc in ("gzip", "x-gzip"):
            return gzip.decompress(body)
        if enc == "deflate":
            return _zlib_streams(body)
        if enc == "br":
            return _brotli(body)
    except ClickHouseError:
        raise
    except Exception as exc:
        raise ClickHouseError.make(
            271, "CANNOT_DECOMPRESS", f"Cannot decompress {enc} request body: {exc}"
        ) from exc
    raise ClickHouseError.make(
        1001, "STD_EXCEPTION", f"Unknown Content-Encoding of HTTP request: {encoding}"
    )


def _lz4_frames(body: bytes) -> bytes:
    out: list[bytes] = []
    rest: bytes = body
    while rest:
        dec = lz4.frame.LZ4FrameDecompressor()
        out.append(dec.decompress(rest))
        if not dec.eof:
            raise ClickHouseError.make(271, "CANNOT_DECOMPRESS", "Truncated LZ4 frame in request")
        rest = dec.unused_data
    return b"".join(out)


def _zlib_streams(body: bytes) -> bytes:
    out: list[bytes] = []
    rest = body
    while rest:
        dec = zlib.decompressobj()
        out.append(dec.decompress(rest))
        rest = dec.unused_data
    return b"".join(out)


def _brotli(body: bytes) -> bytes:
    return bytes(cramjam.brotli.decompress(body))


_BLOCK_HEADER = struct.Struct("<BII")
_BLOCK_CHECKSUM = struct.Struct("<QQ")


def block_checksum(framed: memoryview | bytes) -> bytes:
    """ClickHouse's CityHash128 (v1.0.2) of a block's header and payload: low half first."""
    digest = int(CityHash128(bytes(framed)))
    return _BLOCK_CHECKSUM.pack(digest >> 64, digest & 0xFFFFFFFFFFFFFFFF)


def decode_native_blocks(body: bytes) -> bytes:
    """`decompress=1`: ClickHouse's own compressed-block framing (checksum, method, sizes)."""
    out: list[bytes] = []
    pos = 0
    view = memoryview(body)
    while pos < len(body):
        head = pos + _BLOCK_CHECKSUM.size
        if head + _BLOCK_HEADER.size > len(body):
            raise ClickHouseError.make(271, "CANNOT_DECOMPRESS", "Truncated compressed block")
        method, compressed, plain = _BLOCK_HEADER.unpack_from(body, head)
        if compressed < _BLOCK_HEADER.size or head + compressed > len(body):
            raise ClickHouseError.make(271, "CANNOT_DECOMPRESS", "Truncated compressed block")
        if block_checksum(view[head : head + compressed]) != body[pos:head]:
            raise ClickHouseError.make(
                40, "CHECKSUM_DOESNT_MATCH", "Checksum doesn't match: corrupted data"
            )
        payload = view[head + _BLOCK_HEADER.size : head + compressed]
        if method == 0x82:
            out.append(lz4.block.decompress(payload, uncompressed_size=plain))
        elif method == 0x90:
            out.append(zstd.decompress(payload))
        elif method == 0x02:
            out.append(bytes(payload))
        else:
            raise ClickHouseError.make(
                271, "CANNOT_DECOMPRESS", f"Unknown compression method 0x{method:02x}"
            )
        pos = head + compressed
    return b"".join(out)


# --- response compression ---------------------------------------------------------------------

# Below this size compressing costs more than it saves, even off loopback.
_MIN_COMPRESS = 1024


def compress_response(body: bytes, accept_encoding: str | None) -> tuple[bytes, str | None]:
    """Pick the cheapest encoding the client accepts (lz4 first: it is nearly free)."""
    if len(body) < _MIN_COMPRESS or not accept_encoding:
        return body, None
    accepted = {part.split(";")[0].strip().lower() for part in accept_encoding.split(",")}
    if "lz4" in accepted:
        return lz4.frame.compress(body), "lz4"
    if "zstd" in accepted:
        return zstd.compress(body), "zstd"
    if "gzip" in accepted:
        return gzip.compress(body, compresslevel=3), "gzip"
    if "deflate" in accepted:
        return zlib.compress(body, 3), "deflate"
    if "br" in accepted:
        return bytes(cramjam.brotli.compress(body, level=3)), "br"
    return body, None


# --- credentials ------------------------------------------------------------------------------


def credentials(headers: Mapping[str, str], params: Mapping[str, str]) -> tuple[str, str]:
    """User and password from Basic auth, X-ClickHouse-User/Key, or `user`/`password` params."""
    auth = headers.get("Authorization", "")
    if auth[:6].lower() == "basic ":
        try:
            user, _, password = base64.b64decode(auth[6:].strip()).decode().partition(":")
        except ValueError as exc:
            raise bad_request("Malformed Basic authorization header") from exc
        return user or "default", password
    user = headers.get("X-ClickHouse-User") or params.get("user") or "default"
    password = headers.get("X-ClickHouse-Key") or params.get("password") or ""
    return user, password


def form_fields(content_type: str, body: bytes) -> dict[str, str]:
    """The fields of a `multipart/form-data` body: ClickHouse reads the query and its `param_*`
    from a form as from the URL, and clickhouse-connect sends a form when the parameters would
    not fit a URL (a few hundred ids in an `IN`)."""
    head = f"Content-Type: {content_type}\r\n\r\n".encode()
    message = BytesParser(policy=policy.HTTP).parsebytes(head + body)
    if not message.is_multipart():
        raise bad_request("Malformed multipart/form-data body")
    fields = {}
    for part in message.get_payload():
        assert isinstance(part, Message)
        name = part.get_param("name", header="content-disposition")
        value = part.get_payload(decode=True)
        if isinstance(name, str) and isinstance(value, bytes):
            fields[name] = value.decode()
    return fields


# --- query text -------------------------------------------------------------------------------


def query_settings(params: Mapping[str, str]) -> dict[str, str]:
    settings = {
        k: v for k, v in params.items() if k not in TRANSPORT_PARAMS and not k.startswith("param_")
    }
    for name in settings:
        if not _SETTING_NAME.match(name):
            raise ClickHouseError.make(115, "UNKNOWN_SETTING", f"Setting {name!r} is not valid")
    return settings


def query_params(params: Mapping[str, str]) -> dict[str, str]:
    return {k[6:]: v for k, v in params.items() if k.startswith("param_") and len(k) > 6}


def output_format(sql: str, default: str) -> str:
    match = _TRAILING_FORMAT.search(sql[-256:])
    return match.group(1) if match else default


def is_set_statement(sql: str) -> bool:
    return re.match(r"\s*SET\s", sql, re.IGNORECASE) is not None


def is_use_statement(sql: str) -> bool:
    return re.match(r"\s*USE\s", sql, re.IGNORECASE) is not None


@dataclass(frozen=True)
class InsertWithData:
    """`INSERT … FORMAT X` followed by inline data: the statement without its FORMAT clause."""

    statement: str
    format: str
    data_offset: int


# How far into a body we look for the end of an INSERT statement: the data behind it can be large.
_MAX_STATEMENT = 1 << 20
_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_$]*")
# Statements that carry their rows as SQL, which the engine parses itself.
_NO_INLINE_DATA = frozenset({b"VALUES", b"SELECT", b"WITH"})


def split_insert(buf: bytes) -> InsertWithData | None:
    """Find where an `INSERT … FORMAT X` statement ends and its data begins.

    Scans outside quotes and parentheses so a column or table named `format` does not fool it.
    As ClickHouse does, data starts after the first newline following the format name, or after
    the whitespace there if no newline comes first.
    """
    head = buf[:_MAX_STATEMENT]
    if re.match(rb"\s*INSERT\s", head, re.IGNORECASE) is None:
        return None
    i, depth, n = 0, 0, len(head)
    while i < n:
        ch = head[i]
        if ch in b"'\"`":
            i = _skip_quoted(head, i)
            continue
        if ch == ord("("):
            depth += 1
        elif ch == ord(")"):
            depth -= 1
        elif depth == 0 and (word := _WORD.match(head, i)) is not None:
            keyword = word.group().upper()
            if keyword in _NO_INLINE_DATA:
                return None
            if keyword == b"FORMAT":
                fmt = _WORD.match(head, _skip_space(head, word.end()))
                if fmt is None:
                    return None
                return InsertWithData(
                    statement=head[:i].decode(errors="replace").rstrip(),
                    format=fmt.group().decode(),
                    data_offset=_data_start(head, fmt.end()),
                )
            i = word.end()
            continue
        i += 1
    return None


def _skip_quoted(buf: bytes, start: int) -> int:
    quote = buf[start]
    i = start + 1
    while i < len(buf):
        if buf[i] == ord("\\"):
            i += 2
            continue
        if buf[i] == quote:
            return i + 1
        i += 1
    return i


def _skip_space(buf: bytes, i: int) -> int:
    while i < len(buf) and buf[i] in b" \t\r\n":
        i += 1
    return i


def _data_start(buf: bytes, i: int) -> int:
    while i < len(buf) and buf[i] in b" \t\r\n":
        if buf[i] == ord("\n"):
            return i + 1
        i += 1
    return i
