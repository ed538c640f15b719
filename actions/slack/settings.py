"""Settings of the Slack notifier, the incident teller and the telling of silences' ends
(`CENTRALITY_SLACK_*`)."""

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
        default=3, ge=0, description="Retries of a request whose connection broke, at once."
    )
    timeout_s: int = Field(default=10, gt=0, description="Per request to the Slack API.")
    rate_per_s: float = Field(
        default=1.0,
        gt=0,
        description="Messages a second this worker sends to one channel (Slack takes one a "
        "second per channel; workers sharing a channel share it: 1/N each).",
    )
    backlog_max: int = Field(
        default=10,
        ge=1,
        description="Messages that may wait for their turn in one channel; beyond, new ones are "
        "folded into one digest message, posted in the next turn (never a backlog).",
    )
    queue_max: int = Field(
        default=1000,
        ge=1,
        description="Messages waiting in one channel, a digest's included; beyond, new ones drop.",
    )
    retry_initial_s: float = Field(
        default=1.0, gt=0, description="Scale of the jittered backoff while Slack is down."
    )
    retry_max_s: float = Field(default=60.0, gt=0, description="Longest wait between retries.")
    give_up_after_s: float = Field(
        default=3600.0, gt=0, description="A notification not posted by then is logged as lost."
    )
    tell_incidents: bool = Field(
        default=True,
        description="The action worker tells incidents (the `incidents` topic) to Slack: one "
        "thread each, its parent message updated in place. Only with a token.",
    )
    teller_group_id: str = Field(
        default="centrality-incident-teller",
        description="Consumer group of the incident teller: each incident is told by one worker.",
    )
    tell_resolved_within_s: float = Field(
        default=3600.0,
        gt=0,
        description="An incident first read already resolved is told only if it resolved "
        "within this long: a teller reading the topic's past stays quiet about old ones.",
    )
    teller_concurrency: int = Field(
        default=256,
        ge=1,
        description="Incidents told at once (each one's records in order); a burst beyond "
        "`backlog_max` needs room here to reach its digest.",
    )
    silence_ends_poll_s: float = Field(
        default=5.0,
        gt=0,
        description="How often the action worker looks for silences that ended, to tell each "
        "one's end once (what it held; rules decide afresh).",
    )
    tell_ended_within_s: float = Field(
        default=3600.0,
        gt=0,
        description="A silence first read already ended is told only if it ended within this "
        "long: a worker reading the silences' past stays quiet about old ones.",
    )
