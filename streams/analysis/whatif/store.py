"""A what-if run kept in ClickHouse: one row for the run, one for each priced decision, so
`centrality whatif --show` and dashboards read it back."""

from __future__ import annotations

import uuid
from datetime import datetime

from streams.analysis.whatif.run import WhatIf
from streams.history.client import connect
from streams.history.settings import ClickHouseSettings

WHATIF_COLUMNS = (
    "run_id",
    "ran_at",
    "trigger_id",
    "status",
    "type",
    "rule",
    "cluster",
    "gpu_model",
    "subject",
    "occurred_at",
    "capacity_gpu_h",
    "work_gpu_h",
    "idle_gpu_h",
    "gpu_hours",
    "basis",
)


def store_whatif(settings: ClickHouseSettings, ran_at: datetime, run: WhatIf) -> uuid.UUID:
    """One row for the run, one for each priced decision."""
    run_id = uuid.uuid4()
    differing = sum(d.status != "same" for d in run.decisions)
    not_priced = differing - len(run.priced)
    rows = [
        [
            run_id,
            ran_at,
            uuid.UUID(p.decision.trigger_id),
            p.decision.status,
            p.decision.trigger.type,
            p.decision.trigger.payload.rule,
            p.cluster,
            p.gpu_model or "",
            p.decision.trigger.subject,
            p.decision.trigger.occurred_at,
            p.price.capacity_gpu_h,
            p.price.work_gpu_h,
            p.price.idle_gpu_h,
            p.price.gpu_h,
            p.price.basis,
        ]
        for p in run.priced
    ]
    with connect(settings) as client:
        client.insert(
            "whatif_runs",
            [
                [
                    run_id,
                    ran_at,
                    run.since,
                    run.until,
                    run.candidate.words,
                    run.pricing.response_s,
                    run.pricing.repair_s,
                    len(run.decisions),
                    differing,
                    not_priced,
                    sum(p.price.gpu_h for p in run.priced),
                ]
            ],
            column_names=[
                "run_id",
                "ran_at",
                "since",
                "until",
                "candidate",
                "response_s",
                "repair_s",
                "decisions",
                "differing",
                "not_priced",
                "gpu_hours",
            ],
        )
        if rows:
            client.insert("whatif_decisions", rows, column_names=WHATIF_COLUMNS)
    return run_id
