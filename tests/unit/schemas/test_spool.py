from pathlib import Path

import pytest

from schemas.runtime.emitter.spool import Spool, SpooledRecord, SpoolFullError


def record(n: int, key: bytes | None = b"k") -> SpooledRecord:
    return SpooledRecord("t", key, f"value-{n}".encode(), [("traceparent", b"00-ab")])


def test_records_come_back_in_order_and_ack_is_durable(tmp_path: Path) -> None:
    spool = Spool(tmp_path, 1 << 20)
    spool.append([record(1), record(2, key=None)])
    spool.append([record(3)])
    pending = list(spool.pending())
    assert [r for _, r in pending] == [record(1), record(2, key=None), record(3)]
    spool.ack(pending[0][0])
    spool.close()
    again = Spool(tmp_path, 1 << 20)  # a new process finds the rest, not what was acked
    assert [r.value for _, r in again.pending()] == [b"value-2", b"value-3"]
    again.ack(list(again.pending())[-1][0])
    assert again.empty and not list(tmp_path.glob("*.seg"))


def test_torn_write_is_ignored(tmp_path: Path) -> None:
    spool = Spool(tmp_path, 1 << 20)
    spool.append([record(1)])
    with (tmp_path / "00000001.seg").open("ab") as f:
        f.write(b"\x00\x00\x01\x00partial")  # a crash mid-append: never acknowledged to anyone
    assert [r.value for _, r in spool.pending()] == [b"value-1"]


def test_full_spool_refuses_whole_append(tmp_path: Path) -> None:
    spool = Spool(tmp_path, 200)
    spool.append([record(1)])
    with pytest.raises(SpoolFullError, match="full"):
        spool.append([record(n) for n in range(20)])
    assert len(spool) == 1


def test_second_writer_gets_a_private_dir_and_orphans_are_adopted(tmp_path: Path) -> None:
    owner = Spool(tmp_path, 1 << 20)
    other = Spool(tmp_path, 1 << 20)
    assert other.directory != owner.directory and other.directory.parent.name == "instances"
    other.append([record(7)])
    assert owner.orphans() == []  # its writer is alive: not ours to take
    other.close()  # the writer dies with records unsent
    [adopted] = owner.orphans()
    assert [r.value for _, r in adopted.pending()] == [b"value-7"]
    adopted.ack(list(adopted.pending())[-1][0])
    adopted.close(remove_if_empty=True)
    assert not adopted.directory.exists()
