"""Native at a client's revision and compressed-block frames, against ch-go's golden bytes."""

from __future__ import annotations

from pathlib import Path

import pytest

from centrality.stack.clickhouse_http import ClickHouseError, decode_native_blocks
from centrality.stack.clickhouse_native import (
    METHOD_LZ4,
    METHOD_NONE,
    METHOD_ZSTD,
    compression_method,
    encode_compressed_blocks,
    reencode,
)

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "realworld" / "clickhouse"
BLOCK_INFO = b"\x01\x00\x02\xff\xff\xff\xff\x00"


def _golden(name: str) -> bytes:
    return (GOLDEN / name).read_bytes()


def _as_revision_0(block_54460: bytes) -> bytes:
    """ch-go's block as ClickHouse writes it for revision 0: no BlockInfo, no kind flags."""
    assert block_54460.startswith(BLOCK_INFO)
    body = block_54460[len(BLOCK_INFO) :]
    return body.replace(b"\x04Int8\x00", b"\x04Int8").replace(b"\x06UInt64\x00", b"\x06UInt64")


def test_revision_54460_block_is_byte_for_byte_ch_go_s() -> None:
    golden = _golden("block_int8_uint64.raw")
    assert reencode(_as_revision_0(golden), 54460) == golden


def test_revisions_below_custom_serialization_have_block_info_only() -> None:
    golden = _golden("block_int8_uint64.raw")
    plain = _as_revision_0(golden)
    assert reencode(plain, 54405) == BLOCK_INFO + plain
    assert reencode(plain, 0) == plain


def test_revision_54480_adds_out_of_order_buckets_field() -> None:
    golden = _golden("block_int8_uint64.raw")
    reframed = reencode(_as_revision_0(golden), 54480)
    assert reframed.startswith(b"\x01\x00\x02\xff\xff\xff\xff\x03\x00\x00")
    assert reframed[10:] == golden[len(BLOCK_INFO) :]


def test_several_blocks_and_nested_types_are_walked_to_their_ends() -> None:
    # Revision-0 blocks as the engine writes them: Array(LowCardinality(Nullable(String))),
    # a named Tuple, Map, FixedString, Decimal; then a second block.
    lc = (
        b"\x01\x00\x00\x00\x00\x00\x00\x00"  # LowCardinality keys version (state prefix)
        + b"\x02\x00\x00\x00\x00\x00\x00\x00"  # array offsets: 2
        + b"\x00\x06\x00\x00\x00\x00\x00\x00"  # UInt8 keys, has additional keys
        + b"\x02\x00\x00\x00\x00\x00\x00\x00\x00\x01x"  # 2 keys: NULL slot '' and 'x'
        + b"\x02\x00\x00\x00\x00\x00\x00\x00\x00\x01"  # 2 indexes
    )
    tup = b"\x07" + b"\x02hi"  # a UInt8, b String
    mp = b"\x01\x00\x00\x00\x00\x00\x00\x00" + b"\x01k" + b"\x05\x00\x00\x00"
    block1 = (
        b"\x05\x01"
        + _col("a", "Array(LowCardinality(Nullable(String)))") + lc
        + _col("t", "Tuple(a UInt8, b String)") + tup
        + _col("m", "Map(String, UInt32)") + mp
        + _col("f", "FixedString(3)") + b"abc"
        + _col("d", "Decimal(20, 2)") + b"\x01" * 16
    )  # fmt: skip
    block2 = b"\x01\x02" + _col("n", "Nullable(UInt16)") + b"\x00\x01" + b"\x07\x00\x07\x00"
    out = reencode(block1 + block2, 54460)
    assert out.count(BLOCK_INFO) == 2
    assert out.endswith(
        BLOCK_INFO + b"\x01\x02" + _col("n", "Nullable(UInt16)") + b"\x00\x00\x01\x07\x00\x07\x00"
    )
    for name, data in ((b"Decimal(20, 2)", b"\x01" * 16), (b"FixedString(3)", b"abc")):
        assert name + b"\x00" + data in out


def _col(name: str, type_name: str) -> bytes:
    return bytes([len(name)]) + name.encode() + bytes([len(type_name)]) + type_name.encode()


def test_truncated_engine_output_is_an_error_not_a_wrong_answer() -> None:
    golden = _golden("block_int8_uint64.raw")
    with pytest.raises(ClickHouseError) as err:
        reencode(_as_revision_0(golden)[:-3], 54460)
    assert err.value.name == "CANNOT_READ_ALL_DATA"


def test_types_without_a_known_layout_are_refused() -> None:
    block = b"\x01\x01\x01j\x04JSON\x00"
    with pytest.raises(ClickHouseError) as err:
        reencode(block, 54460)
    assert err.value.name == "NOT_IMPLEMENTED"


@pytest.mark.parametrize("method", ["lz4", "zstd", "none"])
def test_ch_go_s_compressed_blocks_decode_with_their_checksums(method: str) -> None:
    frame = _golden(f"data_compressed_{method}.raw")
    assert decode_native_blocks(frame) == _golden("data_raw.raw")


@pytest.mark.parametrize("method", [METHOD_LZ4, METHOD_ZSTD, METHOD_NONE])
def test_compressed_blocks_round_trip_and_split_at_one_mib(method: int) -> None:
    data = bytes(range(256)) * 9000  # 2.2 MiB: three blocks
    framed = encode_compressed_blocks(data, method)
    assert framed[16] == method
    assert decode_native_blocks(framed) == data


def test_our_lz4_frame_of_ch_go_s_data_carries_the_same_header() -> None:
    ours = encode_compressed_blocks(_golden("data_raw.raw"), METHOD_NONE)
    assert ours == _golden("data_compressed_none.raw")


def test_a_corrupted_block_fails_its_checksum() -> None:
    framed = bytearray(encode_compressed_blocks(b"hello" * 100, METHOD_LZ4))
    framed[-1] ^= 0xFF
    with pytest.raises(ClickHouseError) as err:
        decode_native_blocks(bytes(framed))
    assert err.value.name == "CHECKSUM_DOESNT_MATCH"


def test_network_compression_method_names() -> None:
    assert compression_method(None) == METHOD_LZ4
    assert compression_method("ZSTD") == METHOD_ZSTD
    with pytest.raises(ClickHouseError):
        compression_method("snappy")


def test_low_cardinality_for_clients_older_than_it_is_refused() -> None:
    block = b"\x01\x00" + _col("l", "LowCardinality(String)")
    with pytest.raises(ClickHouseError) as err:
        reencode(block, 54404)
    assert err.value.name == "NOT_IMPLEMENTED"
    assert reencode(block, 54405) == BLOCK_INFO + block


def test_strings_of_every_length_class_are_walked() -> None:
    long = b"y" * 300  # a two-byte length
    block = b"\x01\x03" + _col("s", "String") + b"\x00" + b"\xac\x02" + long + b"\x01z"
    assert (
        reencode(block, 54460)
        == BLOCK_INFO
        + b"\x01\x03"
        + _col("s", "String")
        + b"\x00"
        + (block[len(b"\x01\x03" + _col("s", "String")) :])
    )
    with pytest.raises(ClickHouseError):
        reencode(block[:-1], 54460)
    with pytest.raises(ClickHouseError):
        reencode(block[:-2], 54460)
