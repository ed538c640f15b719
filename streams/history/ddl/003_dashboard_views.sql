-- Aggregates behind the dashboards. Summing targets count what reaches them: a batch dropped by
-- the dedup token never does, but a row re-inserted after a sink restart under a new token is
-- counted twice here (the typed tables collapse it with FINAL; these are for trends).

CREATE TABLE IF NOT EXISTS `{database}`.node_failures_hourly
(
    hour     DateTime('UTC'),
    cluster  LowCardinality(String),
    node     String,
    exits    UInt64,
    failures UInt64
)
ENGINE = SummingMergeTree
PARTITION BY toDate(hour)
ORDER BY (cluster, node, hour)
TTL hour + INTERVAL {ttl_days} DAY;

-- Preemption is not failure: only FAILED attempts count against the nodes they ran on.
CREATE MATERIALIZED VIEW IF NOT EXISTS `{database}`.node_failures_hourly_mv TO `{database}`.node_failures_hourly AS
SELECT toStartOfHour(occurred_at) AS hour, cluster, node,
       count() AS exits, countIf(state = 'FAILED') AS failures
FROM `{database}`.job_events ARRAY JOIN nodes AS node
WHERE type = 'JobExited'
GROUP BY hour, cluster, node;

CREATE TABLE IF NOT EXISTS `{database}`.gpu_errors_hourly
(
    hour                   DateTime('UTC'),
    cluster                LowCardinality(String),
    node                   String,
    gpu                    UInt16,
    samples                UInt64,
    ecc_uncorrected        UInt64,
    nvlink_errors          UInt64,
    throttled              UInt64,
    xids                   UInt64
)
ENGINE = SummingMergeTree
PARTITION BY toDate(hour)
ORDER BY (cluster, node, gpu, hour)
TTL hour + INTERVAL {ttl_days} DAY;

CREATE MATERIALIZED VIEW IF NOT EXISTS `{database}`.gpu_errors_hourly_samples_mv TO `{database}`.gpu_errors_hourly AS
SELECT toStartOfHour(occurred_at) AS hour, cluster, node, gpu,
       count() AS samples,
       countIf(ifNull(ecc_double_bit, 0) > 0 OR ifNull(remapped_rows_uncorrectable, 0) > 0) AS ecc_uncorrected,
       countIf(ifNull(nvlink_crc_errors, 0) > 0 OR ifNull(nvlink_links_down, 0) > 0) AS nvlink_errors,
       countIf(notEmpty(throttle_reasons)) AS throttled,
       toUInt64(0) AS xids
FROM `{database}`.gpu_samples
GROUP BY hour, cluster, node, gpu;

CREATE MATERIALIZED VIEW IF NOT EXISTS `{database}`.gpu_errors_hourly_xid_mv TO `{database}`.gpu_errors_hourly AS
SELECT toStartOfHour(occurred_at) AS hour, cluster, node, gpu,
       toUInt64(0) AS samples, toUInt64(0) AS ecc_uncorrected, toUInt64(0) AS nvlink_errors,
       toUInt64(0) AS throttled, count() AS xids
FROM (SELECT occurred_at, cluster, node, ifNull(gpu, 0) AS gpu FROM `{database}`.node_events WHERE type = 'GpuXidObserved')
GROUP BY hour, cluster, node, gpu;

-- Goodput: the share of attempts that ended in success, and of GPUs they held.
CREATE TABLE IF NOT EXISTS `{database}`.job_goodput_hourly
(
    hour           DateTime('UTC'),
    cluster        LowCardinality(String),
    exits          UInt64,
    succeeded      UInt64,
    failed         UInt64,
    preempted      UInt64,
    gpus           UInt64,
    gpus_succeeded UInt64
)
ENGINE = SummingMergeTree
PARTITION BY toDate(hour)
ORDER BY (cluster, hour)
TTL hour + INTERVAL {ttl_days} DAY;

CREATE MATERIALIZED VIEW IF NOT EXISTS `{database}`.job_goodput_hourly_mv TO `{database}`.job_goodput_hourly AS
SELECT toStartOfHour(occurred_at) AS hour, cluster,
       count() AS exits, countIf(state = 'SUCCEEDED') AS succeeded,
       countIf(state = 'FAILED') AS failed, countIf(state = 'PREEMPTED') AS preempted,
       sum(held) AS gpus, sumIf(held, state = 'SUCCEEDED') AS gpus_succeeded
FROM (SELECT occurred_at, cluster, state, gpus AS held FROM `{database}`.job_events WHERE type = 'JobExited')
GROUP BY hour, cluster;

CREATE TABLE IF NOT EXISTS `{database}`.actions_hourly
(
    hour         DateTime('UTC'),
    cluster      LowCardinality(String),
    action       LowCardinality(String),
    trigger_type LowCardinality(String),
    outcome      LowCardinality(String),
    results      UInt64
)
ENGINE = SummingMergeTree
PARTITION BY toDate(hour)
ORDER BY (cluster, action, trigger_type, outcome, hour)
TTL hour + INTERVAL {ttl_days} DAY;

CREATE MATERIALIZED VIEW IF NOT EXISTS `{database}`.actions_hourly_mv TO `{database}`.actions_hourly AS
SELECT toStartOfHour(occurred_at) AS hour, cluster, action, trigger_type, outcome, count() AS results
FROM `{database}`.action_results
GROUP BY hour, cluster, action, trigger_type, outcome;

-- From the first event behind a decision to the first action on it. A plain view: it joins three
-- tables, which a materialized view (fed one inserted block at a time) cannot do faithfully.
CREATE VIEW IF NOT EXISTS `{database}`.symptom_to_action AS
SELECT
    t.event_id AS trigger_id, t.type AS trigger_type, t.rule AS rule, t.cluster AS cluster,
    t.subject AS subject, t.occurred_at AS decided_at,
    c.first_symptom_at AS first_symptom_at, a.first_action_at AS first_action_at,
    dateDiff('millisecond', c.first_symptom_at, a.first_action_at) / 1000.0 AS symptom_to_action_s
FROM (SELECT * FROM `{database}`.triggers FINAL) AS t
INNER JOIN
(
    SELECT tr.event_id AS tid, min(e.occurred_at) AS first_symptom_at
    FROM (SELECT event_id, caused_by FROM `{database}`.triggers FINAL) AS tr
    ARRAY JOIN tr.caused_by AS cause
    INNER JOIN `{database}`.events AS e ON e.event_id = cause
    GROUP BY tid
) AS c ON c.tid = t.event_id
INNER JOIN
(
    SELECT trigger_id, min(occurred_at) AS first_action_at
    FROM `{database}`.action_results
    WHERE outcome IN ('started', 'succeeded')
    GROUP BY trigger_id
) AS a ON a.trigger_id = t.event_id;
