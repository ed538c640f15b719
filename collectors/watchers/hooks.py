"""Completion hooks as people declare them on a job: `WHEN:JOB …`, e.g.
`succeeded:slurm/c1/4312 ended:k8s/ml/eval-7` (whitespace or commas between entries).

The same text goes where each scheduler lets a job carry words of its own: Slurm's
`--comment=centrality.hooks=…`, the Kubernetes annotation `centrality.io/hooks`, Ray job metadata
`centrality.hooks`. A malformed entry is dropped with a warning, never the whole submission.
"""

from __future__ import annotations

import re

import structlog
from pydantic import ValidationError

from schemas.events.jobs import CompletionHook

log = structlog.get_logger(__name__)

ANNOTATION = "centrality.io/hooks"
METADATA_KEY = HOOKS_KEY = "centrality.hooks"
_MAX_HOOKS = 16  # the contract's limit per job


def comment_value(comment: object, key: str) -> str | None:
    """`key=value` inside a free-text comment (Slurm's `--comment`); `;` ends a value."""
    match = re.search(rf"(?:^|[\s;]){re.escape(key)}=([^;]*)", str(comment or ""))
    return match.group(1).strip() if match else None


def parse_hooks(text: str | None, *, job: str) -> tuple[CompletionHook, ...]:
    hooks: list[CompletionHook] = []
    for entry in re.split(r"[\s,]+", (text or "").strip()):
        if not entry:
            continue
        when, sep, target = entry.partition(":")
        try:
            if not sep:
                raise ValueError("expected WHEN:JOB")
            hooks.append(CompletionHook.model_validate({"when": when, "release": target}))
        except (ValueError, ValidationError) as exc:
            log.warning("hook_ignored", job=job, entry=entry[:200], error=str(exc)[:200])
    if len(hooks) > _MAX_HOOKS:
        log.warning("hooks_truncated", job=job, declared=len(hooks), kept=_MAX_HOOKS)
    return tuple(hooks[:_MAX_HOOKS])
