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
from streams.process import fold_and_decide
from streams.rules.registry import RuleEngine
from streams.settings import StreamsSettings
from streams.state.training_job import TrainingJob

log = structlog.get_logger("streams")

kafka = KafkaSettings()
settings = StreamsSettings()
engine = RuleEngine.load(settings.rule_modules, settings.rule_config)
settings.data_dir.mkdir(parents=True, exist_ok=True)  # Faust creates only the last level

app = faust.App(
    settings.app_id,
    broker=[f"kafka://{host}" for host in kafka.bootstrap.split(",")],
    store=settings.store,
    datadir=str(settings.data_dir),
    topic_partitions=JOB_PARTITIONS,
    autodiscover=False,
    web_enabled=False,
    broker_session_timeout=settings.session_timeout_s,
    broker_heartbeat_interval=settings.heartbeat_interval_s,
    broker_rebalance_timeout=settings.rebalance_timeout_s,
    producer_linger=0.005,
)


def raw() -> Any:
    """Bytes in, bytes out: decoding is ours (schemas.codec), done once, dead-lettered on error.

    A new Schema each time: Faust mutates the schema it is given with its own defaults.
    """
    return faust.Schema(
        key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw"
    )


def _raw_topic(name: str) -> Any:
    return app.topic(topic_name(name, kafka), schema=raw())


jobs_topic = _raw_topic("jobs")
triggers_topic = _raw_topic("triggers")
deadletter_topic = _raw_topic("deadletter")

# Values are the TrainingJob as a JSON document: readable in the changelog by any tool.
training_jobs = app.Table(
    "training_jobs",
    default=None,
    schema=faust.Schema(key_type=bytes, key_serializer="raw", value_serializer="json"),
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
        await _dead_letter(exc.reason, exc.detail, message)
        return
    stored = training_jobs.get(key)
    try:
        state = TrainingJob.model_validate(stored) if stored is not None else None
        state, triggers = fold_and_decide(state, events, engine)
    except Exception as exc:  # a bug in a fold or rule must not wedge the partition forever
        log.exception("processing_failed", topic=message.topic, offset=message.offset)
        await _dead_letter("processing-error", f"{type(exc).__name__}: {exc}", message)
        return
    for trigger in triggers:
        log.info("trigger", type=trigger.type, id=str(trigger.event_id), subject=trigger.subject)
        await triggers_topic.send(key=trigger.key, value=encode(trigger), headers=inject_headers())
    if state is not None:
        training_jobs[key] = state.model_dump(mode="json")


async def _dead_letter(reason: str, detail: str, message: Any) -> None:
    log.warning("dead_letter", reason=reason, topic=message.topic, offset=message.offset)
    letter = DeadLetter(
        reason=reason,
        detail=detail,
        consumer=settings.app_id,
        topic=message.topic,
        partition=message.partition,
        offset=message.offset,
        key=message.key,
        raw=message.value,
    )
    await deadletter_topic.send(key=message.topic.encode(), value=letter.to_bytes())
