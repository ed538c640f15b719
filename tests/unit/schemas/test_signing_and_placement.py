"""Trigger signatures and the placement check, without Kafka."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from pydantic import SecretStr

from schemas.events import JobExited, NodeHeartbeat
from schemas.placement import misplaced, partition_for
from schemas.signing import SigningSettings, ensure_key_file, signed_headers, verify
from tests.factories import exited

KEY = SecretStr("k1")


def test_a_signature_verifies_only_the_signed_value_under_the_same_key() -> None:
    headers = signed_headers(b"value", KEY)
    assert verify(b"value", headers, KEY)
    assert not verify(b"value2", headers, KEY)
    assert not verify(b"value", headers, SecretStr("k2"))
    assert not verify(b"value", [], KEY)
    assert not verify(b"value", [("other", headers[0][1])], KEY)


def test_the_key_comes_from_the_environment_first_then_the_key_file(tmp_path: Path) -> None:
    path = ensure_key_file(tmp_path / "sub" / "trigger.key")
    assert path.stat().st_mode & 0o777 == 0o600
    from_file = SigningSettings(key_file=path).resolve()
    assert from_file is not None and len(from_file.get_secret_value()) >= 32
    assert ensure_key_file(path).read_text().strip() == from_file.get_secret_value()  # kept
    assert SigningSettings(key=SecretStr("x"), key_file=path).resolve() == SecretStr("x")
    assert SigningSettings(key_file=tmp_path / "none").resolve() is None


def _exit(subject: str) -> JobExited:
    return exited(subject=subject)


def test_misplaced_messages_are_named_by_reason() -> None:
    a, b = _exit("slurm/c/1"), _exit("slurm/c/2")
    key = b"slurm/c/1"
    right = partition_for(key, 4)
    assert misplaced([a], topic="jobs", key=key, partition=right, partitions=4) is None
    cases = {
        "mixed-subjects": misplaced([a, b], topic="jobs", key=key),
        "wrong-topic": misplaced([a], topic="nodes", key=key),
        "wrong-key": misplaced([a], topic="jobs", key=b"slurm/c/2"),
        "wrong-partition": misplaced(
            [a], topic="jobs", key=key, partition=(right + 1) % 4, partitions=4
        ),
    }
    assert {reason: err.reason if err else None for reason, err in cases.items()} == {
        r: r for r in cases
    }
    beat = NodeHeartbeat(
        source="t",
        cluster="c",
        subject="n1",
        occurred_at=datetime(2026, 1, 1, tzinfo=UTC),
        payload={"agent_version": "1", "gpus": 8, "interval_s": 30},
    )
    assert misplaced([beat], topic="nodes", key=None) is not None


def test_partition_for_matches_the_java_client() -> None:
    # Utils.murmur2 test vectors of Apache Kafka's UtilsTest, placed as the Java producer's
    # default partitioner does: toPositive(murmur2(key)) % partitions.
    vectors = {b"21": -973932308, b"foobar": -790332482, b"a-little-bit-long-string": -985981536}
    for key, java in vectors.items():
        assert partition_for(key, 1009) == (java & 0x7FFFFFFF) % 1009
