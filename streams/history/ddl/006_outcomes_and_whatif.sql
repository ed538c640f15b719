-- What `centrality report` and `centrality whatif` found, kept so dashboards show it. Every
-- table collapses rows of equal sort keys (ReplacingMergeTree), so an insert retried is one row.
--
-- `rule_outcomes`: each rule's decision to take a node out (one row per node) or restart a job,
-- and what became of it (streams/outcomes.py). A later report over the same decisions replaces
-- their rows (a pending outcome turns confirmed or a false alarm): the decision is the sort key,
-- and the newest report wins. `job_ettr` is the same for each job's time as of the report's end.

CREATE TABLE IF NOT EXISTS `{database}`.rule_outcomes
(
    trigger_id   UUID,
    kind         LowCardinality(String),
    rule         LowCardinality(String),
    cluster      LowCardinality(String),
    subject      String,
    decided_at   DateTime64(6, 'UTC'),
    symptom_at   Nullable(DateTime64(6, 'UTC')),
    drained_at   Nullable(DateTime64(6, 'UTC')),
    validated_at Nullable(DateTime64(6, 'UTC')),
    verdict      LowCardinality(String),
    released_at  Nullable(DateTime64(6, 'UTC')),
    requeued_at  Nullable(DateTime64(6, 'UTC')),
    started_at   Nullable(DateTime64(6, 'UTC')),
    again_at     Nullable(DateTime64(6, 'UTC')),
    outcome      LowCardinality(String),
    why          String,
    reported_at  DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(reported_at)
PARTITION BY toYYYYMM(decided_at)
ORDER BY (cluster, kind, rule, subject, trigger_id)
TTL toDateTime(reported_at) + INTERVAL {ttl_days} DAY;

CREATE TABLE IF NOT EXISTS `{database}`.reports
(
    report_id     UUID,
    reported_at   DateTime64(3, 'UTC'),
    since         DateTime64(6, 'UTC'),
    until         DateTime64(6, 'UTC'),
    nodes_judged  UInt32,
    failure_rate  Nullable(Float64),
    lemon_alpha   Float64
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(reported_at)
ORDER BY (reported_at, report_id)
TTL toDateTime(reported_at) + INTERVAL {ttl_days} DAY;

CREATE TABLE IF NOT EXISTS `{database}`.lemon_nodes
(
    report_id   UUID,
    reported_at DateTime64(3, 'UTC'),
    cluster     LowCardinality(String),
    node        String,
    jobs_ran    UInt32,
    jobs_failed UInt32,
    expected    Float64,
    p_value     Float64
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(reported_at)
ORDER BY (cluster, node, reported_at, report_id)
TTL toDateTime(reported_at) + INTERVAL {ttl_days} DAY;

CREATE TABLE IF NOT EXISTS `{database}`.job_ettr
(
    job_id       String,
    cluster      LowCardinality(String),
    gpus         UInt32,
    productive_s Float64,
    lost_s       Float64,
    open_s       Float64,
    as_of        DateTime64(6, 'UTC'),
    reported_at  DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(reported_at)
PARTITION BY toYYYYMM(as_of)
ORDER BY (cluster, job_id)
TTL toDateTime(reported_at) + INTERVAL {ttl_days} DAY;

-- `whatif_decisions`: each decision a candidate rule set decides otherwise than was decided
-- (streams/whatif), priced in GPU-hours; `whatif_runs` says what each run compared, and under
-- which assumptions (a person's response time, a node's repair time).
CREATE TABLE IF NOT EXISTS `{database}`.whatif_runs
(
    run_id       UUID,
    ran_at       DateTime64(3, 'UTC'),
    since        DateTime64(6, 'UTC'),
    until        DateTime64(6, 'UTC'),
    candidate    String,
    response_s   Float64,
    repair_s     Float64,
    decisions    UInt64,
    differing    UInt64,
    not_priced   UInt64,
    gpu_hours    Float64
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(ran_at)
ORDER BY (ran_at, run_id)
TTL toDateTime(ran_at) + INTERVAL {ttl_days} DAY;

CREATE TABLE IF NOT EXISTS `{database}`.whatif_decisions
(
    run_id        UUID,
    ran_at        DateTime64(3, 'UTC'),
    trigger_id    UUID,
    status        LowCardinality(String),
    type          LowCardinality(String),
    rule          LowCardinality(String),
    cluster       LowCardinality(String),
    gpu_model     LowCardinality(String),
    subject       String,
    occurred_at   DateTime64(6, 'UTC'),
    capacity_gpu_h Float64,
    work_gpu_h    Float64,
    idle_gpu_h    Float64,
    gpu_hours     Float64,
    basis         String
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(ran_at)
ORDER BY (run_id, rule, cluster, trigger_id)
TTL toDateTime(ran_at) + INTERVAL {ttl_days} DAY;
