-- Typed tables per event family, filled from `events` by materialized views, so the sink inserts
-- one block per batch and the dedup token on `events` also guards these (a deduplicated block
-- never reaches the views). ReplacingMergeTree with event_id in the key is the backstop.

CREATE TABLE IF NOT EXISTS `{database}`.job_events
(
    event_id    UUID,
    type        LowCardinality(String),
    cluster     LowCardinality(String),
    job_id      String,
    occurred_at DateTime64(6, 'UTC'),
    state       LowCardinality(String),
    raw_state   String,
    attempt     UInt32,
    exit_code   Nullable(Int32),
    nodes       Array(String),
    gpus        UInt32,
    reason      String,
    signal      LowCardinality(String),
    step        Nullable(Int64),
    uri         String
)
ENGINE = ReplacingMergeTree
PARTITION BY toDate(occurred_at)
ORDER BY (cluster, job_id, occurred_at, event_id)
TTL toDateTime(occurred_at) + INTERVAL {ttl_days} DAY
SETTINGS non_replicated_deduplication_window = 1000;

CREATE MATERIALIZED VIEW IF NOT EXISTS `{database}`.job_events_mv TO `{database}`.job_events AS
SELECT
    event_id, type, cluster, subject AS job_id, occurred_at,
    JSONExtractString(payload, 'state') AS state,
    JSONExtractString(payload, 'raw_state') AS raw_state,
    JSONExtractUInt(payload, 'attempt') AS attempt,
    JSONExtract(payload, 'exit_code', 'Nullable(Int32)') AS exit_code,
    JSONExtract(payload, 'nodes', 'Array(String)') AS nodes,
    JSONExtractUInt(payload, 'gpus') AS gpus,
    JSONExtractString(payload, 'reason') AS reason,
    JSONExtractString(payload, 'signal') AS signal,
    JSONExtract(payload, 'step', 'Nullable(Int64)') AS step,
    JSONExtractString(payload, 'uri') AS uri
FROM `{database}`.events
WHERE type IN ('JobSubmitted', 'JobStateChanged', 'JobExited', 'CheckpointSaved', 'LogSignalDetected');

CREATE TABLE IF NOT EXISTS `{database}`.log_lines
(
    event_id    UUID,
    line_no     UInt32,
    cluster     LowCardinality(String),
    job_id      String,
    occurred_at DateTime64(6, 'UTC'),
    at          Nullable(DateTime64(6, 'UTC')),
    node        String,
    rank        Nullable(Int32),
    stream      LowCardinality(String),
    line        String
)
ENGINE = ReplacingMergeTree
PARTITION BY toDate(occurred_at)
ORDER BY (cluster, job_id, occurred_at, event_id, line_no)
TTL toDateTime(occurred_at) + INTERVAL {samples_ttl_days} DAY
SETTINGS non_replicated_deduplication_window = 1000;

CREATE MATERIALIZED VIEW IF NOT EXISTS `{database}`.log_lines_mv TO `{database}`.log_lines AS
SELECT
    event_id, toUInt32(n) AS line_no, cluster, subject AS job_id, occurred_at,
    parseDateTime64BestEffortOrNull(JSONExtractString(l, 'at'), 6, 'UTC') AS at,
    JSONExtractString(l, 'node') AS node,
    JSONExtract(l, 'rank', 'Nullable(Int32)') AS rank,
    JSONExtractString(l, 'stream') AS stream,
    JSONExtractString(l, 'line') AS line
FROM `{database}`.events
ARRAY JOIN JSONExtractArrayRaw(payload, 'lines') AS l, arrayEnumerate(JSONExtractArrayRaw(payload, 'lines')) AS n
WHERE type = 'LogLinesObserved';

CREATE TABLE IF NOT EXISTS `{database}`.gpu_samples
(
    event_id                    UUID,
    cluster                     LowCardinality(String),
    node                        String,
    occurred_at                 DateTime64(6, 'UTC'),
    gpu                         UInt16,
    utilization_pct             Nullable(Float32),
    memory_used_bytes           Nullable(UInt64),
    temperature_c               Nullable(Float32),
    power_w                     Nullable(Float32),
    ecc_single_bit              Nullable(UInt64),
    ecc_double_bit              Nullable(UInt64),
    remapped_rows_uncorrectable Nullable(UInt64),
    nvlink_crc_errors           Nullable(UInt64),
    nvlink_links_down           Nullable(UInt32),
    pcie_replay_errors          Nullable(UInt64),
    throttle_reasons            Array(LowCardinality(String))
)
ENGINE = ReplacingMergeTree
PARTITION BY toDate(occurred_at)
ORDER BY (cluster, node, gpu, occurred_at, event_id)
TTL toDateTime(occurred_at) + INTERVAL {samples_ttl_days} DAY
SETTINGS non_replicated_deduplication_window = 1000;

CREATE MATERIALIZED VIEW IF NOT EXISTS `{database}`.gpu_samples_mv TO `{database}`.gpu_samples AS
SELECT
    event_id, cluster, subject AS node, occurred_at,
    JSONExtractUInt(payload, 'gpu') AS gpu,
    JSONExtract(payload, 'utilization_pct', 'Nullable(Float32)') AS utilization_pct,
    JSONExtract(payload, 'memory_used_bytes', 'Nullable(UInt64)') AS memory_used_bytes,
    JSONExtract(payload, 'temperature_c', 'Nullable(Float32)') AS temperature_c,
    JSONExtract(payload, 'power_w', 'Nullable(Float32)') AS power_w,
    JSONExtract(payload, 'ecc_single_bit', 'Nullable(UInt64)') AS ecc_single_bit,
    JSONExtract(payload, 'ecc_double_bit', 'Nullable(UInt64)') AS ecc_double_bit,
    JSONExtract(payload, 'remapped_rows_uncorrectable', 'Nullable(UInt64)') AS remapped_rows_uncorrectable,
    JSONExtract(payload, 'nvlink_crc_errors', 'Nullable(UInt64)') AS nvlink_crc_errors,
    JSONExtract(payload, 'nvlink_links_down', 'Nullable(UInt32)') AS nvlink_links_down,
    JSONExtract(payload, 'pcie_replay_errors', 'Nullable(UInt64)') AS pcie_replay_errors,
    JSONExtract(payload, 'throttle_reasons', 'Array(String)') AS throttle_reasons
FROM `{database}`.events
WHERE type = 'GpuSampled';

CREATE TABLE IF NOT EXISTS `{database}`.node_events
(
    event_id    UUID,
    type        LowCardinality(String),
    cluster     LowCardinality(String),
    node        String,
    occurred_at DateTime64(6, 'UTC'),
    status      LowCardinality(String),
    check       LowCardinality(String),
    message     String,
    gpu         Nullable(UInt16),
    xid         Nullable(UInt32),
    trigger_id  Nullable(UUID)
)
ENGINE = ReplacingMergeTree
PARTITION BY toDate(occurred_at)
ORDER BY (cluster, node, occurred_at, event_id)
TTL toDateTime(occurred_at) + INTERVAL {ttl_days} DAY
SETTINGS non_replicated_deduplication_window = 1000;

CREATE MATERIALIZED VIEW IF NOT EXISTS `{database}`.node_events_mv TO `{database}`.node_events AS
SELECT
    event_id, type, cluster, subject AS node, occurred_at,
    multiIf(type = 'NodeHealthChecked', JSONExtractString(payload, 'status'),
            type = 'BenchmarkCompleted', JSONExtractString(payload, 'verdict'),
            type = 'GpuXidObserved', 'XID', 'OK') AS status,
    JSONExtractString(payload, 'check') AS check,
    if(type = 'GpuXidObserved', JSONExtractString(payload, 'message'),
       if(type = 'BenchmarkCompleted', arrayStringConcat(JSONExtract(payload, 'reasons', 'Array(String)'), '; '),
          JSONExtractString(payload, 'message'))) AS message,
    JSONExtract(payload, 'gpu', 'Nullable(UInt16)') AS gpu,
    JSONExtract(payload, 'xid', 'Nullable(UInt32)') AS xid,
    toUUIDOrNull(JSONExtractString(payload, 'trigger_id')) AS trigger_id
FROM `{database}`.events
WHERE type IN ('NodeHeartbeat', 'NodeHealthChecked', 'GpuXidObserved', 'BenchmarkCompleted');

CREATE TABLE IF NOT EXISTS `{database}`.triggers
(
    event_id    UUID,
    type        LowCardinality(String),
    cluster     LowCardinality(String),
    subject     String,
    occurred_at DateTime64(6, 'UTC'),
    rule        LowCardinality(String),
    window      String,
    reason      String,
    severity    LowCardinality(String),
    caused_by   Array(UUID),
    nodes       Array(String),
    payload     String
)
ENGINE = ReplacingMergeTree
PARTITION BY toDate(occurred_at)
ORDER BY (cluster, subject, occurred_at, event_id)
TTL toDateTime(occurred_at) + INTERVAL {ttl_days} DAY
SETTINGS non_replicated_deduplication_window = 1000;

CREATE MATERIALIZED VIEW IF NOT EXISTS `{database}`.triggers_mv TO `{database}`.triggers AS
SELECT
    event_id, type, cluster, subject, occurred_at,
    JSONExtractString(payload, 'rule') AS rule,
    JSONExtractString(payload, 'window') AS window,
    JSONExtractString(payload, 'reason') AS reason,
    JSONExtractString(payload, 'severity') AS severity,
    arrayMap(x -> toUUID(x), JSONExtract(payload, 'caused_by', 'Array(String)')) AS caused_by,
    JSONExtract(payload, 'nodes', 'Array(String)') AS nodes,
    payload
FROM `{database}`.events
WHERE topic LIKE '%triggers';

CREATE TABLE IF NOT EXISTS `{database}`.action_results
(
    event_id     UUID,
    type         LowCardinality(String),
    outcome      LowCardinality(String),
    cluster      LowCardinality(String),
    subject      String,
    occurred_at  DateTime64(6, 'UTC'),
    trigger_id   UUID,
    trigger_type LowCardinality(String),
    action       LowCardinality(String),
    attempt      UInt32,
    dry_run      Bool,
    error        String,
    permanent    Bool,
    detail       String
)
ENGINE = ReplacingMergeTree
PARTITION BY toDate(occurred_at)
ORDER BY (cluster, trigger_id, occurred_at, event_id)
TTL toDateTime(occurred_at) + INTERVAL {ttl_days} DAY
SETTINGS non_replicated_deduplication_window = 1000;

CREATE MATERIALIZED VIEW IF NOT EXISTS `{database}`.action_results_mv TO `{database}`.action_results AS
SELECT
    event_id, type,
    multiIf(type = 'ActionStarted', 'started', type = 'ActionSucceeded', 'succeeded', 'failed') AS outcome,
    cluster, subject, occurred_at,
    toUUID(JSONExtractString(payload, 'trigger_id')) AS trigger_id,
    JSONExtractString(payload, 'trigger_type') AS trigger_type,
    JSONExtractString(payload, 'action') AS action,
    JSONExtractUInt(payload, 'attempt') AS attempt,
    JSONExtractBool(payload, 'dry_run') AS dry_run,
    JSONExtractString(payload, 'error') AS error,
    JSONExtractBool(payload, 'permanent') AS permanent,
    JSONExtractRaw(payload, 'detail') AS detail
FROM `{database}`.events
WHERE type IN ('ActionStarted', 'ActionSucceeded', 'ActionFailed');
