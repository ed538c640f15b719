"""A minute of the node agent on a real H200 (tests/fixtures/realworld/nvml/PROVENANCE.md)
through the contract, the codec, the Node fold and every built-in rule.

The fake backend fills every field; the real driver leaves some None (no page retirement on
Hopper, no NVLink on a one-GPU VM) and reports throttling under load: none of that may read as a
fault, and the GPU's idle time must follow what it really did.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from collectors.health.builtin.nvlink_down import nvlink_down
from collectors.health.registry import CheckContext
from schemas.codec import decode, encode
from schemas.events import GpuSampled
from schemas.events.gpus import GpuSampledPayload
from schemas.events.nodes import HealthStatus
from streams.brain.process import Brain
from streams.rules.registry import RuleEngine
from streams.settings import StreamsSettings
from streams.testing import T0, envelope

RECORD = Path(__file__).parents[2] / "fixtures" / "realworld" / "nvml" / "h200_agent_minute.json"


@pytest.fixture(scope="module")
def record() -> dict[str, Any]:
    return json.loads(RECORD.read_text())


def samples(record: dict[str, Any]) -> list[GpuSampled]:
    events = []
    for s in record["samples"]:
        fields = {k: v for k, v in s.items() if k != "t_s"}
        events.append(
            GpuSampled(**envelope("h200-vm", s["t_s"]), payload=GpuSampledPayload(**fields))
        )
    return events


def test_real_samples_pass_the_contract_and_the_codec_unchanged(record: dict[str, Any]) -> None:
    events = samples(record)
    assert len(events) == 65 and record["facts"]["name"] == "NVIDIA H200"
    for event in events:
        assert decode(encode(event)) == [event]
    fields_left_empty = {k for s in record["samples"] for k, v in s.items() if v is None}
    assert {"retired_pages", "nvlink_links_down", "nvlink_crc_errors"} <= fields_left_empty


def test_a_real_busy_then_idle_gpu_decides_nothing_and_idles_from_the_first_idle_sample(
    record: dict[str, Any],
) -> None:
    brain = Brain(RuleEngine.load(StreamsSettings().rule_modules, {}))
    decided = [t for event in samples(record) for t in brain.handle(event)]
    decided += brain.tick(T0 + timedelta(seconds=70))
    assert decided == []  # SwPowerCap under load, None counters: no fault
    node = brain.nodes["h200-vm"]
    assert node.gpus == {}  # no error counter ever rose
    busy = [s["t_s"] for s in record["samples"] if s["utilization_pct"] > 1]
    first_idle_after = min(s["t_s"] for s in record["samples"] if s["t_s"] > max(busy))
    assert node.idle_since == T0 + timedelta(seconds=first_idle_after)


def test_real_health_results_and_nvlink_on_a_gpu_without_links(record: dict[str, Any]) -> None:
    assert {h["check"]: h["status"] for h in record["health"]} == {
        "fatal_xids": "OK",
        "ecc_double_bit": "OK",
        "gpu_count": "OK",
        "disk_space": "OK",
        "nvlink_down": "OK",
    }
    ctx = CheckContext(
        expected_gpus=None,
        visible_gpus=lambda: 1,
        fatal_xids=frozenset(),
        xid_window_s=3600.0,
        disk_paths=(),
        disk_warn_pct=90.0,
        disk_critical_pct=95.0,
    )
    ctx.samples[0] = samples(record)[30].payload
    result = nvlink_down(ctx)
    assert (result.status, result.message) == (HealthStatus.OK, "no NVLink links reported")
