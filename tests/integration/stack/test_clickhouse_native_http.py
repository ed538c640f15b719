"""Native at the client's revision and compressed answers, over plain HTTP (as curl sends it)."""

from __future__ import annotations

import gzip
import urllib.parse
import urllib.request
import zlib
from pathlib import Path

import cramjam
import lz4.frame  # type: ignore[import-untyped]
import pytest
from backports import zstd

from centrality.stack.clickhouse_http import decode_native_blocks
from centrality.stack.stack import Stack

pytestmark = pytest.mark.integration

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "realworld" / "clickhouse"
# The rows of ch-go's golden block (tests/fixtures/realworld/clickhouse/PROVENANCE.md).
GOLDEN_QUERY = (
    "SELECT c AS count, u AS users FROM values('c Int8, u UInt64', "
    "(1, 5467267), (2, 175676), (3, 956105), (4, 18347896), (5, 554714))"
)
BLOCK_INFO = b"\x01\x00\x02\xff\xff\xff\xff\x00"


def _post(
    stack: Stack, sql: str, headers: dict[str, str] | None = None, **params: str
) -> tuple[bytes, dict[str, str]]:
    settings = stack.clickhouse
    url = settings.url.rstrip("/") + "/?" + urllib.parse.urlencode(params)
    request = urllib.request.Request(url, data=sql.encode(), headers=headers or {}, method="POST")
    if settings.password is not None:
        request.add_header("X-ClickHouse-User", settings.user)
        request.add_header("X-ClickHouse-Key", settings.password.get_secret_value())
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.read(), dict(response.headers.items())


def test_native_at_revision_54460_is_the_block_ch_go_writes(stack: Stack) -> None:
    golden = (GOLDEN / "block_int8_uint64.raw").read_bytes()
    body, headers = _post(
        stack, GOLDEN_QUERY, default_format="Native", client_protocol_version="54460"
    )
    assert body == golden
    assert headers["X-ClickHouse-Format"] == "Native"
    # Without a revision: ClickHouse's plain HTTP Native, no BlockInfo, no serialization flags.
    plain, _ = _post(stack, GOLDEN_QUERY + " FORMAT Native")
    assert not plain.startswith(BLOCK_INFO)
    assert BLOCK_INFO + plain.replace(b"Int8", b"Int8\x00").replace(b"UInt64", b"UInt64\x00") == (
        golden
    )


@pytest.mark.parametrize(("method", "code"), [("lz4", 0x82), ("zstd", 0x90), ("none", 0x02)])
def test_compress_1_answers_in_checksummed_blocks(stack: Stack, method: str, code: int) -> None:
    golden = (GOLDEN / "block_int8_uint64.raw").read_bytes()
    body, _ = _post(
        stack,
        GOLDEN_QUERY,
        default_format="Native",
        client_protocol_version="54460",
        compress="1",
        network_compression_method=method,
    )
    assert body[16] == code
    assert decode_native_blocks(body) == golden  # verifies the CityHash128 checksums


@pytest.mark.parametrize(
    ("encoding", "decode"),
    [
        ("gzip", gzip.decompress),
        ("deflate", zlib.decompress),
        ("br", lambda b: bytes(cramjam.brotli.decompress(b))),
        ("zstd", zstd.decompress),
        ("lz4", lz4.frame.decompress),
    ],
)
def test_http_compression_follows_accept_encoding(
    stack: Stack, encoding: str, decode: object
) -> None:
    sql = "SELECT number, toString(number) FROM numbers(2000)"
    plain, _ = _post(stack, sql, default_format="Native", client_protocol_version="54460")
    body, headers = _post(
        stack,
        sql,
        headers={"Accept-Encoding": encoding},
        default_format="Native",
        client_protocol_version="54460",
        enable_http_compression="1",
    )
    assert headers["Content-Encoding"] == encoding
    assert callable(decode) and decode(body) == plain
    assert plain.startswith(BLOCK_INFO + b"\x02\xd0\x0f")  # 2 columns, 2000 rows


def test_datetime_keeps_its_time_zone_from_revision_54337(stack: Stack) -> None:
    sql = "SELECT toDateTime(0, 'Asia/Tokyo') AS t, now() AS n"
    new, _ = _post(stack, sql, default_format="Native", client_protocol_version="54460")
    old, _ = _post(stack, sql, default_format="Native", client_protocol_version="54336")
    head = BLOCK_INFO + b"\x02\x01\x01t"
    # From 54454 each column also has its serialization flag (0) before the data.
    assert new.startswith(
        head + b"\x16DateTime('Asia/Tokyo')\x00" + bytes(4) + b"\x01n\x08DateTime\x00"
    )
    assert old.startswith(head + b"\x08DateTime" + bytes(4) + b"\x01n\x08DateTime")
    assert len(old) == len(head) + 9 + 4 + 11 + 4


def test_headers_carry_database_and_format(stack: Stack) -> None:
    body, headers = _post(
        stack,
        "SELECT currentDatabase()",
        headers={"X-ClickHouse-Database": "system", "X-ClickHouse-Format": "JSONEachRow"},
    )
    assert body == b'{"currentDatabase()":"system"}\n'
    assert headers["X-ClickHouse-Format"] == "JSONEachRow"
