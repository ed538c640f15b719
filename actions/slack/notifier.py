"""Notifiers: post a message into the thread of its incident (Slack, or the log without a token)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
    ServerErrorRetryHandler,
)

from actions.errors import PermanentError, TemporaryError
from actions.ledger import ThreadRef
from actions.slack.settings import SlackSettings

log = structlog.get_logger("actions.slack")


@dataclass(frozen=True)
class Message:
    text: str  # the notification/fallback text
    blocks: list[dict[str, Any]] = field(default_factory=list)


class Notifier(Protocol):
    threads: dict[str, ThreadRef]

    def post(self, incident: str, message: Message) -> dict[str, Any]:
        """Post into the incident's thread (opening it first time); say what was posted."""
        ...


class LogNotifier:
    """Without a Slack token the message still leaves a trace, in the worker's log."""

    def __init__(self) -> None:
        self.threads: dict[str, ThreadRef] = {}

    def post(self, incident: str, message: Message) -> dict[str, Any]:
        log.warning("notification", incident=incident, text=message.text)
        return {"notifier": "log", "incident": incident}


class SlackNotifier:
    def __init__(self, settings: SlackSettings, threads: dict[str, ThreadRef] | None = None):
        assert settings.token is not None
        self.channel = settings.channel
        self.threads = dict(threads or {})
        base_url = settings.base_url if settings.base_url.endswith("/") else settings.base_url + "/"
        self.client = WebClient(
            token=settings.token.get_secret_value(),
            base_url=base_url,
            timeout=settings.timeout_s,
            retry_handlers=[
                RateLimitErrorRetryHandler(max_retry_count=settings.max_retries),
                ServerErrorRetryHandler(max_retry_count=settings.max_retries),
                ConnectionErrorRetryHandler(max_retry_count=settings.max_retries),
            ],
        )

    def post(self, incident: str, message: Message) -> dict[str, Any]:
        thread = self.threads.get(incident)
        try:
            response = self.client.chat_postMessage(
                channel=thread.channel if thread else self.channel,
                text=message.text,
                blocks=message.blocks or None,
                thread_ts=thread.ts if thread else None,
            )
        except SlackApiError as exc:
            status = exc.response.status_code
            # Retry handlers already waited out 429s and 5xx; what is left is still worth a
            # handler retry only if Slack is overloaded, never for a bad token or channel.
            error = f"slack {status}: {exc.response.get('error', '')}"
            raise (TemporaryError if status == 429 or status >= 500 else PermanentError)(
                error
            ) from None
        if thread is None:
            thread = ThreadRef(channel=str(response["channel"]), ts=str(response["ts"]))
            self.threads[incident] = thread
        log.info("slack_posted", incident=incident, channel=thread.channel, ts=response["ts"])
        return {
            "notifier": "slack",
            "incident": incident,
            "channel": thread.channel,
            "thread_ts": thread.ts,
            "ts": str(response["ts"]),
        }


def make_notifier(
    settings: SlackSettings | None = None, threads: dict[str, ThreadRef] | None = None
) -> Notifier:
    settings = settings or SlackSettings()
    if settings.token is None:
        return LogNotifier()
    return SlackNotifier(settings, threads)
