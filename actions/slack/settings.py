"""Settings of the Slack notifier (`CENTRALITY_SLACK_*`)."""

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class SlackSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CENTRALITY_SLACK_", extra="ignore")

    token: SecretStr | None = Field(
        default=None, description="Bot token; without one, notifications are only logged."
    )
    channel: str = Field(default="#gpu-incidents", description="Channel incidents are posted to.")
    base_url: str = Field(default="https://slack.com/api/", description="Slack Web API base URL.")
    max_retries: int = Field(
        default=3, ge=0, description="Retries on 429, 5xx, broken connections."
    )
    timeout_s: int = Field(default=10, gt=0)
