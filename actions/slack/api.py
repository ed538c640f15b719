"""The Slack Web API calls the notifier makes (`chat.postMessage`, `chat.update`), through
slack_sdk's WebClient, or into the worker's log without a token.

One call, one request: waiting (Slack's pace, `Retry-After`, backoff) is the notifier's, on its
own clock, so WebClient retries only a request whose connection broke. What Slack answers is
sorted for it: HTTP 429 is `RateLimited` with Slack's `Retry-After`; a 5xx or a timeout is a
`TemporaryError`; any other refusal (`invalid_auth`, `channel_not_found`, `invalid_blocks`,
`message_not_found`, ...) is `Refused`, permanent, with Slack's error code.
"""

from __future__ import annotations

import itertools
from typing import Any, Protocol

import structlog
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import ConnectionErrorRetryHandler

from actions.errors import PermanentError, TemporaryError
from actions.ledger import ThreadRef
from actions.slack.message import Message
from actions.slack.settings import SlackSettings
from schemas.runtime.metrics.catalog import SLACK_CALLS

log = structlog.get_logger("actions.slack")


class RateLimited(TemporaryError):
    def __init__(self, method: str, retry_after_s: float) -> None:
        super().__init__(f"slack 429: {method} ratelimited, retry after {retry_after_s:g}s")
        self.retry_after_s = retry_after_s


class Refused(PermanentError):
    def __init__(self, method: str, status: int, error: str) -> None:
        super().__init__(f"slack {status}: {method} {error}")
        self.error = error


class Api(Protocol):
    paced: bool  # whether calls must keep Slack's pace

    def post(self, channel: str, message: Message, thread_ts: str | None) -> ThreadRef:
        """Post; where the message now is (the channel's id, its ts)."""
        ...

    def update(self, ref: ThreadRef, message: Message) -> ThreadRef: ...


class SlackApi:
    paced = True

    def __init__(self, settings: SlackSettings) -> None:
        assert settings.token is not None
        base_url = settings.base_url if settings.base_url.endswith("/") else settings.base_url + "/"
        self.client = WebClient(
            token=settings.token.get_secret_value(),
            base_url=base_url,
            timeout=settings.timeout_s,
            retry_handlers=[ConnectionErrorRetryHandler(max_retry_count=settings.max_retries)],
        )

    def post(self, channel: str, message: Message, thread_ts: str | None) -> ThreadRef:
        answer = self._call(
            "chat.postMessage",
            channel=channel,
            text=message.text,
            blocks=message.blocks or None,
            thread_ts=thread_ts,
        )
        return ThreadRef(channel=str(answer["channel"]), ts=str(answer["ts"]))

    def update(self, ref: ThreadRef, message: Message) -> ThreadRef:
        answer = self._call(
            "chat.update", channel=ref.channel, ts=ref.ts, text=message.text, blocks=message.blocks
        )
        return ThreadRef(channel=str(answer["channel"]), ts=str(answer["ts"]))

    def _call(self, method: str, **args: Any) -> Any:
        try:
            answer = self.client.api_call(method, json=_without_none(args))
        except SlackApiError as exc:
            status = exc.response.status_code
            if status == 429:
                SLACK_CALLS.labels(method, "ratelimited").inc()
                headers = {k.lower(): v for k, v in exc.response.headers.items()}
                raise RateLimited(method, float(headers.get("retry-after") or 1)) from None
            SLACK_CALLS.labels(method, "failed" if status >= 500 else "refused").inc()
            if status >= 500:
                raise TemporaryError(f"slack {status}: {method}") from None
            raise Refused(method, status, str(exc.response.get("error", ""))) from None
        except OSError as exc:  # the connection, after WebClient's own retries; a timeout
            SLACK_CALLS.labels(method, "failed").inc()
            raise TemporaryError(f"slack: {method}: {type(exc).__name__}: {exc}") from None
        SLACK_CALLS.labels(method, "ok").inc()
        return answer


class LogApi:
    """Without a Slack token a message still leaves a trace, in the worker's log."""

    paced = False

    def __init__(self) -> None:
        self._ts = itertools.count(1)

    def post(self, channel: str, message: Message, thread_ts: str | None) -> ThreadRef:
        log.warning("notification", thread=thread_ts, text=message.text)
        return ThreadRef(channel="log", ts=thread_ts or f"log.{next(self._ts)}")

    def update(self, ref: ThreadRef, message: Message) -> ThreadRef:
        log.warning("notification_updated", thread=ref.ts, text=message.text)
        return ref


def _without_none(args: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in args.items() if v is not None}
