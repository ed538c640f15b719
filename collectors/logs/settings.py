"""`CENTRALITY_TAIL_*`: which files the tailer follows, how it names jobs, what it looks for."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from collectors.events import hostname
from schemas.events.logs import LogSignal
from schemas.limits import LOG_LINE, LOG_LINES


class PatternSpec(BaseModel):
    signal: LogSignal = LogSignal.CUSTOM
    regex: str
    name: str | None = None


class TailSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CENTRALITY_TAIL_", extra="ignore")

    paths: tuple[str, ...] = Field(default=(), description="Globs of files to follow.")
    state_file: Path = Field(
        default_factory=lambda: Path.home() / ".local/share/centrality/tail-offsets.json",
        description="Offsets per file identity, so a restart resumes where it stopped.",
    )
    poll_s: float = Field(default=1.0, gt=0, description="How often files are read.")
    cluster: str = Field(default="default", description="Cluster name stamped on events.")
    node: str = Field(default_factory=hostname, description="Node the files are on.")
    job_pattern: str = Field(
        default=r"slurm-(?P<job>\d+(?:_\d+)?)\.(?:out|err)$",
        description="Regex on the path; its `job` group names the job.",
    )
    job_template: str = Field(
        default="slurm/{cluster}/{job}",
        description="Job id made from the pattern's named groups (`job` at least) and `cluster`.",
    )
    marker_dir: Path | None = Field(
        default=None,
        description="Per-job completion markers: the file named by a job's `job` group holds "
        "the text that marks that job complete (written by a Slurm prolog or the job itself).",
    )
    default_patterns: bool = Field(default=True, description="Use the built-in signal patterns.")
    patterns: tuple[PatternSpec, ...] = Field(default=(), description="Extra patterns (JSON).")
    read_chunk_bytes: int = Field(default=256 * 1024, gt=0, description="Read per file per poll.")
    max_line_bytes: int = Field(
        default=LOG_LINE, gt=0, le=LOG_LINE, description="Longer lines are cut (contract limit)."
    )
    max_lines_per_event: int = Field(
        default=LOG_LINES, gt=0, le=LOG_LINES, description="Lines per message (contract limit)."
    )
    step_summary_s: float = Field(
        default=60.0,
        gt=0,
        description="How often the step times read from trainers' lines are sent: one "
        "StepTimesObserved per job and rank (steps, median, slowest, last step, trainer).",
    )
