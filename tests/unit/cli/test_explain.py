"""How an exception finds its one-line explanation."""

from __future__ import annotations

import asyncio

from aiokafka.errors import KafkaConnectionError

from centrality.entry import CentralityGroup  # noqa: F401  (registers every explainer)
from centrality.errors import UNAVAILABLE, USAGE, UserError, explain
from schemas.runtime.admin import MissingTopicsError
from schemas.runtime.settings import KafkaSettings


def test_a_cause_explains_what_was_raised_from_it() -> None:
    try:
        try:
            raise KafkaConnectionError("Unable to bootstrap")
        except KafkaConnectionError as exc:
            raise RuntimeError("the sink could not start") from exc
    except RuntimeError as wrapped:
        failure = explain(wrapped)
    assert failure is not None and failure.code == UNAVAILABLE
    assert "Kafka at " in failure.problem and "make up" in failure.fix


def test_an_exception_group_is_explained_by_its_members() -> None:
    async def tasks() -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(asyncio.sleep(0))

            async def fail() -> None:
                raise UserError("bad --nodes", "give a positive number")

            group.create_task(fail())

    try:
        asyncio.run(tasks())
    except BaseExceptionGroup as exc:
        failure = explain(exc)
    assert failure is not None and (failure.code, failure.line) == (
        USAGE,
        "bad --nodes; give a positive number",
    )


def test_what_was_being_handled_does_not_explain_a_new_error() -> None:
    try:
        try:
            raise FileNotFoundError(2, "No such file", "/etc/x")
        except FileNotFoundError:
            raise ZeroDivisionError("a bug while handling it")  # noqa: B904
    except ZeroDivisionError as bug:
        assert explain(bug) is None  # reported as unexpected, with --debug for the traceback


def test_missing_topics_are_named_with_what_creates_them_and_exit_2() -> None:
    kafka = KafkaSettings(bootstrap="127.0.0.1:19092", topic_prefix="blue.")
    failure = explain(MissingTopicsError(kafka, ["blue.jobs", "blue.nodes"]))
    assert failure is not None and failure.code == USAGE
    assert failure.line == (
        "Kafka at 127.0.0.1:19092 has no topic blue.jobs, blue.nodes "
        "(CENTRALITY_KAFKA_TOPIC_PREFIX=blue.); `centrality up` with the same settings creates "
        "them; `centrality doctor` checks them"
    )
