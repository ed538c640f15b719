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
    timeout_s: int = Field(default=10, gt=0, description="Per request to the Slack API.")
    queue_max: int = Field(
        default=1000, ge=1, description="Notifications waiting for Slack; beyond, new ones drop."
    )
    retry_initial_s: float = Field(
        default=1.0, gt=0, description="Scale of the jittered backoff while Slack is down."
    )
    retry_max_s: float = Field(default=60.0, gt=0, description="Longest wait between retries.")
    give_up_after_s: float = Field(
        default=3600.0, gt=0, description="A notification not posted by then is logged as lost."
    )
