"""The Faust app. Run it with `faust -A streams.app worker --without-web` or `centrality streams`.

Agents here are thin shells: decode, fold (pure), evaluate rules (pure), send triggers.
"""

from __future__ import annotations

from typing import Any

import faust
import structlog

from schemas.codec import DecodeError, decode, encode
from schemas.deadletter import DeadLetter
from schemas.settings import KafkaSettings
from schemas.topics import JOB_PARTITIONS, topic_name
from schemas.tracing import inject_headers
from streams.rules.registry import RuleEngine
from streams.settings import StreamsSettings
from streams.state.training_job import TrainingJob, apply

log = structlog.get_logger("streams")

kafka = KafkaSettings()
settings = StreamsSettings()
engine = RuleEngine.load(settings.rule_modules, settings.rule_config)

app = faust.App(
    settings.app_id,
    broker=[f"kafka://{host}" for host in kafka.bootstrap.split(",")],
    store=settings.store,
    datadir=str(settings.data_dir),
    topic_partitions=JOB_PARTITIONS,
    topic_allow_declare=False,
    autodiscover=False,
    web_enabled=False,
    broker_session_timeout=settings.session_timeout_s,
    broker_heartbeat_interval=settings.heartbeat_interval_s,
    broker_rebalance_timeout=settings.rebalance_timeout_s,
    producer_linger=0.005,
)


def _raw_topic(name: str) -> Any:
    return app.topic(
        topic_name(name, kafka),
        key_type=bytes,
        value_type=bytes,
        key_serializer="raw",
        value_serializer="raw",
    )


jobs_topic = _raw_topic("jobs")
triggers_topic = _raw_topic("triggers")
deadletter_topic = _raw_topic("deadletter")

training_jobs = app.Table(
    "training_jobs",
    default=None,
    key_type=bytes,
    value_type=bytes,
    key_serializer="raw",
    value_serializer="raw",
    partitions=JOB_PARTITIONS,
)


@app.agent(jobs_topic)
async def fold_jobs(stream: Any) -> None:
    async for message in stream.events():
        await handle_job_message(message.key, message.value, message.message)


async def handle_job_message(key: bytes, value: bytes, message: Any) -> None:
    try:
        events = decode(value)
    except DecodeError as exc:
        await _dead_letter(exc, message)
        return
    raw = training_jobs[key]
    state = TrainingJob.model_validate_json(raw) if raw is not None else None
    for event in events:
        state = apply(state, event)
        for trigger in engine.evaluate(state, event):
            log.info(
                "trigger", type=trigger.type, id=str(trigger.event_id), subject=trigger.subject
            )
            await triggers_topic.send(
                key=trigger.key, value=encode(trigger), headers=inject_headers()
            )
    if state is not None:
        training_jobs[key] = state.model_dump_json().encode()


async def _dead_letter(exc: DecodeError, message: Any) -> None:
    log.warning("dead_letter", reason=exc.reason, topic=message.topic, offset=message.offset)
    letter = DeadLetter(
        reason=exc.reason,
        detail=exc.detail,
        consumer=settings.app_id,
        topic=message.topic,
        partition=message.partition,
        offset=message.offset,
        key=message.key,
        raw=message.value,
    )
    await deadletter_topic.send(key=message.topic.encode(), value=letter.to_bytes())
