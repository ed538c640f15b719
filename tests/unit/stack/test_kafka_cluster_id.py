"""The local broker's cluster id: one the storage tool accepts, stable per state dir."""

from __future__ import annotations

from pathlib import Path

from centrality.stack.kafka import LocalKafka
from centrality.stack.settings import StackSettings


def broker(tmp_path: Path) -> LocalKafka:
    return LocalKafka(StackSettings(state_dir=tmp_path))


def test_the_id_is_stable_and_never_reads_as_an_option(tmp_path: Path) -> None:
    ids = {broker(tmp_path / str(n)).cluster_id() for n in range(300)}
    assert not any(i.startswith("-") for i in ids)  # ~5 of 300 would, drawn naively
    assert all(len(i) == 22 for i in ids)
    kafka = broker(tmp_path / "0")
    assert kafka.cluster_id() == kafka.cluster_id()


def test_a_stored_id_the_tool_refuses_is_replaced(tmp_path: Path) -> None:
    kafka = broker(tmp_path)
    kafka.home.mkdir(parents=True)
    (kafka.home / "cluster.id").write_text("-Ab3dEfGhIjKlMnOpQrStU")
    replaced = kafka.cluster_id()
    assert not replaced.startswith("-")
    assert kafka.cluster_id() == replaced
