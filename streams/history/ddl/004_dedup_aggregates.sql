-- Dashboard aggregates that count an event once however often it was inserted.
--
-- 003's SummingMergeTree targets counted every row reaching their views, so an event the sink
-- wrote twice (a batch re-read after a crash, under another dedup token) was counted twice. Here
-- each count is a set of identities merged by AggregatingMergeTree: a duplicate adds nothing.
--   * low-volume facts (exits, XIDs, action results): uniqExact over event_id;
--   * GPU samples (hundreds per GPU-hour): a bitmap of each sample's millisecond within its hour,
--     exact per (node, gpu) and ~2 bytes a sample against ~16+ for a set of UUIDs;
--   * GPUs held by exits: maxMap keyed by event_id, so a duplicate exit adds its GPUs once.
-- The old table names become plain views that merge the states, so dashboards keep reading
-- `node_failures_hourly` & co. with plain sums; WHERE on their keys is pushed into the view.
-- Each target is created and its view attached before it is backfilled from the typed tables:
-- rows arriving meanwhile are counted by both, which the sets make harmless.

CREATE TABLE IF NOT EXISTS `{database}`.node_failures_hourly_agg
(
    hour     DateTime('UTC'),
    cluster  LowCardinality(String),
    node     String,
    exits    AggregateFunction(uniqExact, UUID),
    failures AggregateFunction(uniqExact, UUID)
)
ENGINE = AggregatingMergeTree
PARTITION BY toDate(hour)
ORDER BY (cluster, node, hour)
TTL hour + INTERVAL {ttl_days} DAY;

DROP VIEW IF EXISTS `{database}`.node_failures_hourly_mv;
DROP TABLE IF EXISTS `{database}`.node_failures_hourly;

-- Preemption is not failure: only FAILED attempts count against the nodes they ran on.
CREATE MATERIALIZED VIEW IF NOT EXISTS `{database}`.node_failures_hourly_mv TO `{database}`.node_failures_hourly_agg AS
SELECT toStartOfHour(occurred_at) AS hour, cluster, node,
       uniqExactState(event_id) AS exits, uniqExactStateIf(event_id, state = 'FAILED') AS failures
FROM `{database}`.job_events ARRAY JOIN nodes AS node
WHERE type = 'JobExited'
GROUP BY hour, cluster, node;

INSERT INTO `{database}`.node_failures_hourly_agg
SELECT toStartOfHour(occurred_at) AS hour, cluster, node,
       uniqExactState(event_id) AS exits, uniqExactStateIf(event_id, state = 'FAILED') AS failures
FROM `{database}`.job_events ARRAY JOIN nodes AS node
WHERE type = 'JobExited'
GROUP BY hour, cluster, node;

CREATE VIEW IF NOT EXISTS `{database}`.node_failures_hourly AS
SELECT hour, cluster, node, uniqExactMerge(exits) AS exits, uniqExactMerge(failures) AS failures
FROM `{database}`.node_failures_hourly_agg
GROUP BY hour, cluster, node;

CREATE TABLE IF NOT EXISTS `{database}`.gpu_errors_hourly_agg
(
    hour            DateTime('UTC'),
    cluster         LowCardinality(String),
    node            String,
    gpu             UInt16,
    samples         AggregateFunction(groupBitmap, UInt32),
    ecc_uncorrected AggregateFunction(groupBitmap, UInt32),
    nvlink_errors   AggregateFunction(groupBitmap, UInt32),
    throttled       AggregateFunction(groupBitmap, UInt32),
    xids            AggregateFunction(uniqExact, UUID)
)
ENGINE = AggregatingMergeTree
PARTITION BY toDate(hour)
ORDER BY (cluster, node, gpu, hour)
TTL hour + INTERVAL {ttl_days} DAY;

DROP VIEW IF EXISTS `{database}`.gpu_errors_hourly_samples_mv;
DROP VIEW IF EXISTS `{database}`.gpu_errors_hourly_xid_mv;
DROP TABLE IF EXISTS `{database}`.gpu_errors_hourly;

CREATE MATERIALIZED VIEW IF NOT EXISTS `{database}`.gpu_errors_hourly_samples_mv TO `{database}`.gpu_errors_hourly_agg AS
SELECT hour, cluster, node, gpu,
       groupBitmapState(ms) AS samples,
       groupBitmapStateIf(ms, ifNull(ecc_double_bit, 0) > 0 OR ifNull(remapped_rows_uncorrectable, 0) > 0) AS ecc_uncorrected,
       groupBitmapStateIf(ms, ifNull(nvlink_crc_errors, 0) > 0 OR ifNull(nvlink_links_down, 0) > 0) AS nvlink_errors,
       groupBitmapStateIf(ms, notEmpty(throttle_reasons)) AS throttled
FROM
(
    SELECT *, toStartOfHour(occurred_at) AS hour,
           toUInt32(toUnixTimestamp64Milli(occurred_at) - toInt64(toUnixTimestamp(hour)) * 1000) AS ms
    FROM `{database}`.gpu_samples
)
GROUP BY hour, cluster, node, gpu;

CREATE MATERIALIZED VIEW IF NOT EXISTS `{database}`.gpu_errors_hourly_xid_mv TO `{database}`.gpu_errors_hourly_agg AS
SELECT toStartOfHour(occurred_at) AS hour, cluster, node, ifNull(gpu, 0) AS gpu,
       uniqExactState(event_id) AS xids
FROM `{database}`.node_events
WHERE type = 'GpuXidObserved'
GROUP BY hour, cluster, node, gpu;

INSERT INTO `{database}`.gpu_errors_hourly_agg (hour, cluster, node, gpu, samples, ecc_uncorrected, nvlink_errors, throttled)
SELECT hour, cluster, node, gpu,
       groupBitmapState(ms) AS samples,
       groupBitmapStateIf(ms, ifNull(ecc_double_bit, 0) > 0 OR ifNull(remapped_rows_uncorrectable, 0) > 0) AS ecc_uncorrected,
       groupBitmapStateIf(ms, ifNull(nvlink_crc_errors, 0) > 0 OR ifNull(nvlink_links_down, 0) > 0) AS nvlink_errors,
       groupBitmapStateIf(ms, notEmpty(throttle_reasons)) AS throttled
FROM
(
    SELECT *, toStartOfHour(occurred_at) AS hour,
           toUInt32(toUnixTimestamp64Milli(occurred_at) - toInt64(toUnixTimestamp(hour)) * 1000) AS ms
    FROM `{database}`.gpu_samples
)
GROUP BY hour, cluster, node, gpu;

INSERT INTO `{database}`.gpu_errors_hourly_agg (hour, cluster, node, gpu, xids)
SELECT toStartOfHour(occurred_at) AS hour, cluster, node, ifNull(gpu, 0) AS gpu,
       uniqExactState(event_id) AS xids
FROM `{database}`.node_events
WHERE type = 'GpuXidObserved'
GROUP BY hour, cluster, node, gpu;

CREATE VIEW IF NOT EXISTS `{database}`.gpu_errors_hourly AS
SELECT hour, cluster, node, gpu,
       groupBitmapMerge(samples) AS samples, groupBitmapMerge(ecc_uncorrected) AS ecc_uncorrected,
       groupBitmapMerge(nvlink_errors) AS nvlink_errors, groupBitmapMerge(throttled) AS throttled,
       uniqExactMerge(xids) AS xids
FROM `{database}`.gpu_errors_hourly_agg
GROUP BY hour, cluster, node, gpu;

-- Goodput: the share of attempts that ended in success, and of GPUs they held.
CREATE TABLE IF NOT EXISTS `{database}`.job_goodput_hourly_agg
(
    hour           DateTime('UTC'),
    cluster        LowCardinality(String),
    exits          AggregateFunction(uniqExact, UUID),
    succeeded      AggregateFunction(uniqExact, UUID),
    failed         AggregateFunction(uniqExact, UUID),
    preempted      AggregateFunction(uniqExact, UUID),
    gpus           AggregateFunction(maxMap, Array(UUID), Array(UInt64)),
    gpus_succeeded AggregateFunction(maxMap, Array(UUID), Array(UInt64))
)
ENGINE = AggregatingMergeTree
PARTITION BY toDate(hour)
ORDER BY (cluster, hour)
TTL hour + INTERVAL {ttl_days} DAY;

DROP VIEW IF EXISTS `{database}`.job_goodput_hourly_mv;
DROP TABLE IF EXISTS `{database}`.job_goodput_hourly;

CREATE MATERIALIZED VIEW IF NOT EXISTS `{database}`.job_goodput_hourly_mv TO `{database}`.job_goodput_hourly_agg AS
SELECT toStartOfHour(occurred_at) AS hour, cluster,
       uniqExactState(event_id) AS exits,
       uniqExactStateIf(event_id, state = 'SUCCEEDED') AS succeeded,
       uniqExactStateIf(event_id, state = 'FAILED') AS failed,
       uniqExactStateIf(event_id, state = 'PREEMPTED') AS preempted,
       maxMapState([event_id], [held]) AS gpus,
       maxMapStateIf([event_id], [held], state = 'SUCCEEDED') AS gpus_succeeded
FROM
(
    SELECT event_id, occurred_at, cluster, state, toUInt64(gpus) AS held
    FROM `{database}`.job_events
    WHERE type = 'JobExited'
)
GROUP BY hour, cluster;

INSERT INTO `{database}`.job_goodput_hourly_agg
SELECT toStartOfHour(occurred_at) AS hour, cluster,
       uniqExactState(event_id) AS exits,
       uniqExactStateIf(event_id, state = 'SUCCEEDED') AS succeeded,
       uniqExactStateIf(event_id, state = 'FAILED') AS failed,
       uniqExactStateIf(event_id, state = 'PREEMPTED') AS preempted,
       maxMapState([event_id], [held]) AS gpus,
       maxMapStateIf([event_id], [held], state = 'SUCCEEDED') AS gpus_succeeded
FROM
(
    SELECT event_id, occurred_at, cluster, state, toUInt64(gpus) AS held
    FROM `{database}`.job_events
    WHERE type = 'JobExited'
)
GROUP BY hour, cluster;

CREATE VIEW IF NOT EXISTS `{database}`.job_goodput_hourly AS
SELECT hour, cluster,
       uniqExactMerge(exits) AS exits, uniqExactMerge(succeeded) AS succeeded,
       uniqExactMerge(failed) AS failed, uniqExactMerge(preempted) AS preempted,
       arraySum(maxMapMerge(gpus).2) AS gpus, arraySum(maxMapMerge(gpus_succeeded).2) AS gpus_succeeded
FROM `{database}`.job_goodput_hourly_agg
GROUP BY hour, cluster;

CREATE TABLE IF NOT EXISTS `{database}`.actions_hourly_agg
(
    hour         DateTime('UTC'),
    cluster      LowCardinality(String),
    action       LowCardinality(String),
    trigger_type LowCardinality(String),
    outcome      LowCardinality(String),
    results      AggregateFunction(uniqExact, UUID)
)
ENGINE = AggregatingMergeTree
PARTITION BY toDate(hour)
ORDER BY (cluster, action, trigger_type, outcome, hour)
TTL hour + INTERVAL {ttl_days} DAY;

DROP VIEW IF EXISTS `{database}`.actions_hourly_mv;
DROP TABLE IF EXISTS `{database}`.actions_hourly;

CREATE MATERIALIZED VIEW IF NOT EXISTS `{database}`.actions_hourly_mv TO `{database}`.actions_hourly_agg AS
SELECT toStartOfHour(occurred_at) AS hour, cluster, action, trigger_type, outcome,
       uniqExactState(event_id) AS results
FROM `{database}`.action_results
GROUP BY hour, cluster, action, trigger_type, outcome;

INSERT INTO `{database}`.actions_hourly_agg
SELECT toStartOfHour(occurred_at) AS hour, cluster, action, trigger_type, outcome,
       uniqExactState(event_id) AS results
FROM `{database}`.action_results
GROUP BY hour, cluster, action, trigger_type, outcome;

CREATE VIEW IF NOT EXISTS `{database}`.actions_hourly AS
SELECT hour, cluster, action, trigger_type, outcome, uniqExactMerge(results) AS results
FROM `{database}`.actions_hourly_agg
GROUP BY hour, cluster, action, trigger_type, outcome;
