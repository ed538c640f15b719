"""The exported JSON Schemas as a Node.js consumer reads them: Ajv in strict mode compiles every
file with only the keywords `keywords.json` declares, accepts what the codec encodes and refuses
what the decoder refuses. Node and the Ajv that tests/js's lock pins (`make tools`) are required:
the test fails, never skips, without them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import orjson
import pytest

from schemas.codec import DecodeError, decode, encode
from schemas.envelope import Event
from schemas.jsonschema import JSON_DIR
from streams.testing import (
    benchmark,
    checkpoint,
    decide,
    ended,
    facts,
    health,
    heartbeat,
    log_signal,
    result,
    running,
    sample,
    scheduler_says,
    xid,
)

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "js" / "ajv_strict.cjs"
LOCK = ROOT / "tests" / "js" / "package-lock.json"
MODULES = ROOT / ".tools" / "js" / "node_modules"


def _ajv(schemas: Path, *args: str) -> subprocess.CompletedProcess[str]:
    node = shutil.which("node")
    assert node, "node is not on PATH: install Node.js (Debian: apt-get install nodejs)"
    pinned = orjson.loads(LOCK.read_bytes())["packages"]
    for package in ("ajv", "ajv-formats"):
        manifest = MODULES / package / "package.json"
        assert manifest.is_file(), f"{package} is not in {MODULES}: run `make tools`"
        installed = orjson.loads(manifest.read_bytes())["version"]
        wanted = pinned[f"node_modules/{package}"]["version"]
        assert installed == wanted, f"{package} {installed} installed, {wanted} pinned: make tools"
    return subprocess.run(
        [node, str(SCRIPT), str(schemas), *args],
        env={"NODE_PATH": str(MODULES), "PATH": str(Path(node).parent)},
        capture_output=True,
        text=True,
        timeout=60,
    )


def _events() -> list[Event]:
    """One of each family the builders rule authors use make, and what the brain decides."""
    decided = decide(running(), log_signal(signal="NCCL_TIMEOUT", at_s=1), ended(at_s=2))
    decided += decide(running(), xid("n1", 79, at_s=1))
    assert {t.type for t in decided} >= {"RestartJob", "QuarantineNodes"}
    return [
        running(),
        ended(exit_code=None),
        checkpoint(1200),
        log_signal(signal="NCCL_TIMEOUT", line="NCCL WARN Timeout"),
        heartbeat(),
        facts(gpu_model="NVIDIA H100 80GB HBM3", partitions=("gpu",)),
        health("n1", "dcgm", "CRITICAL", message="PCIe replay"),
        xid("n2", 48, gpu=3),
        sample(power_w=612.5),
        benchmark(tflops=710.0, busbw_gbps=180.0),
        scheduler_says("n1", "DRAINED", raw_state="IDLE+DRAIN"),
        *decided,
        result(decided[0]),
        result(decided[-1], error="scontrol: Invalid node state"),
    ]


def _jsonl(path: Path, messages: list[object]) -> str:
    path.write_bytes(b"".join(orjson.dumps(m) + b"\n" for m in messages))
    return str(path)


def test_ajv_strict_compiles_the_files_and_judges_messages_as_the_codec(tmp_path: Path) -> None:
    docs = [orjson.loads(encode(e)) for e in _events()]
    valid = [*docs, [docs[4], docs[4]]]  # a batch: heartbeats of one node
    base = docs[1]
    invalid = [
        {k: v for k, v in base.items() if k != "event_id"},
        {**base, "type": "JobExploded"},
        {**base, "occurred_at": "2000-01-01T00:30:00+01:00"},  # before 2000 in UTC: formatMinimum
        {**base, "payload": {**base["payload"], "exit_status": 1}},
        [],
    ]
    for doc in invalid:
        with pytest.raises(DecodeError):
            decode(orjson.dumps(doc))
    result = _ajv(
        JSON_DIR,
        "--valid",
        _jsonl(tmp_path / "valid.jsonl", valid),
        "--invalid",
        _jsonl(tmp_path / "invalid.jsonl", invalid),
    )
    assert result.returncode == 0, result.stderr
    assert f"{len(valid) + len(invalid)} messages judged as expected" in result.stdout
    assert "x-topic" in result.stdout


def test_an_undeclared_x_keyword_fails_strict_mode_until_keywords_json_declares_it(
    tmp_path: Path,
) -> None:
    schemas = Path(shutil.copytree(JSON_DIR, tmp_path / "json"))
    exited = schemas / "events" / "JobExited.json"
    exited.write_bytes(orjson.dumps({**orjson.loads(exited.read_bytes()), "x-owner": "ops"}))
    refused = _ajv(schemas)
    assert refused.returncode == 1
    assert 'events/JobExited.json: strict mode: unknown keyword: "x-owner"' in refused.stderr

    keywords = schemas / "keywords.json"
    declared = {**orjson.loads(keywords.read_bytes()), "x-owner": {"type": "string"}}
    keywords.write_bytes(orjson.dumps(declared))
    accepted = _ajv(schemas)
    assert accepted.returncode == 0, accepted.stderr
