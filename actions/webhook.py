"""A webhook for a ticketing system: a JSON document POSTed per escalation
(`CENTRALITY_WEBHOOK_*`).

Without a URL the document is only logged, as Slack messages are without a token. A 2xx answer
is done; 429, 5xx and a broken connection are temporary (the action is retried), any other
answer is permanent.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any, Protocol

import structlog
from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from actions.errors import PermanentError, TemporaryError

log = structlog.get_logger("actions.webhook")


class WebhookSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CENTRALITY_WEBHOOK_", extra="ignore")

    url: str | None = Field(
        default=None, description="Where escalations are POSTed as JSON; unset: only logged."
    )
    token: SecretStr | None = Field(
        default=None, description="Sent as `Authorization: Bearer <token>` when set."
    )
    timeout_s: float = Field(default=10.0, gt=0, description="Per request.")


class Webhook(Protocol):
    def post(self, document: dict[str, Any]) -> dict[str, Any]:
        """Deliver `document`; say what was done."""
        ...


class LogWebhook:
    def post(self, document: dict[str, Any]) -> dict[str, Any]:
        log.warning("webhook", document=document)
        return {"webhook": "log"}


class HttpWebhook:
    def __init__(self, settings: WebhookSettings) -> None:
        assert settings.url is not None
        self.settings = settings

    def post(self, document: dict[str, Any]) -> dict[str, Any]:
        headers = {"Content-Type": "application/json"}
        if self.settings.token is not None:
            headers["Authorization"] = f"Bearer {self.settings.token.get_secret_value()}"
        request = urllib.request.Request(
            str(self.settings.url), data=json.dumps(document).encode(), headers=headers
        )
        try:
            with urllib.request.urlopen(request, timeout=self.settings.timeout_s) as response:
                status = int(response.status)
        except urllib.error.HTTPError as exc:
            retry = exc.code == 429 or exc.code >= 500
            raise (TemporaryError if retry else PermanentError)(
                f"webhook answered {exc.code}"
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            raise TemporaryError(f"webhook unreachable: {exc}") from None
        log.info("webhook_posted", status=status)
        return {"webhook": "http", "status": status}


def make_webhook(settings: WebhookSettings | None = None) -> Webhook:
    settings = settings or WebhookSettings()
    return LogWebhook() if settings.url is None else HttpWebhook(settings)
