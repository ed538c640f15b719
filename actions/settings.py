"""Settings of the action worker (`CENTRALITY_ACTIONS_*`)."""

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class ActionsSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CENTRALITY_ACTIONS_", extra="ignore")

    group_id: str = Field(default="centrality-actions", description="Consumer group of the worker.")
    adapter: str = Field(default="memory", description="Scheduler adapter: `memory` for now.")
    source: str = Field(default="actions", description="`source` of the results it emits.")
