-- Everything the contract accepts is stored and can be read back unchanged.
--
-- Retention counts from when a row was written, not from its event time: a TTL on event time
-- drops at insert every row older than the retention (a replay, a late producer) and overflowed
-- for far-future times (`toDateTime` of year 9999 wraps, so the row was expired on arrival).
-- `events` and `dead_letters` have an insert-time column already; the typed tables get one (rows
-- written before this migration count from the migration). The hourly dashboard aggregates keep
-- their TTL on the hour they describe: they are trends, and the rows behind them are kept here.
ALTER TABLE `{database}`.events MODIFY TTL toDateTime(inserted_at) + INTERVAL {ttl_days} DAY;

ALTER TABLE `{database}`.dead_letters MODIFY TTL toDateTime(inserted_at) + INTERVAL {ttl_days} DAY;

ALTER TABLE `{database}`.job_events ADD COLUMN IF NOT EXISTS inserted_at DateTime64(3, 'UTC') DEFAULT now64(3);

ALTER TABLE `{database}`.job_events MATERIALIZE COLUMN inserted_at;

ALTER TABLE `{database}`.job_events MODIFY TTL toDateTime(inserted_at) + INTERVAL {ttl_days} DAY;

ALTER TABLE `{database}`.log_lines ADD COLUMN IF NOT EXISTS inserted_at DateTime64(3, 'UTC') DEFAULT now64(3);

ALTER TABLE `{database}`.log_lines MATERIALIZE COLUMN inserted_at;

ALTER TABLE `{database}`.log_lines MODIFY TTL toDateTime(inserted_at) + INTERVAL {samples_ttl_days} DAY;

ALTER TABLE `{database}`.gpu_samples ADD COLUMN IF NOT EXISTS inserted_at DateTime64(3, 'UTC') DEFAULT now64(3);

ALTER TABLE `{database}`.gpu_samples MATERIALIZE COLUMN inserted_at;

ALTER TABLE `{database}`.gpu_samples MODIFY TTL toDateTime(inserted_at) + INTERVAL {samples_ttl_days} DAY;

ALTER TABLE `{database}`.node_events ADD COLUMN IF NOT EXISTS inserted_at DateTime64(3, 'UTC') DEFAULT now64(3);

ALTER TABLE `{database}`.node_events MATERIALIZE COLUMN inserted_at;

ALTER TABLE `{database}`.node_events MODIFY TTL toDateTime(inserted_at) + INTERVAL {ttl_days} DAY;

ALTER TABLE `{database}`.triggers ADD COLUMN IF NOT EXISTS inserted_at DateTime64(3, 'UTC') DEFAULT now64(3);

ALTER TABLE `{database}`.triggers MATERIALIZE COLUMN inserted_at;

ALTER TABLE `{database}`.triggers MODIFY TTL toDateTime(inserted_at) + INTERVAL {ttl_days} DAY;

ALTER TABLE `{database}`.action_results ADD COLUMN IF NOT EXISTS inserted_at DateTime64(3, 'UTC') DEFAULT now64(3);

ALTER TABLE `{database}`.action_results MATERIALIZE COLUMN inserted_at;

ALTER TABLE `{database}`.action_results MODIFY TTL toDateTime(inserted_at) + INTERVAL {ttl_days} DAY;

-- The contract's exit codes are 64-bit integers; Int32 turned larger ones into NULL. A signal is a
-- number on JobExited and a word on LogSignalDetected: both are kept as written (JSONExtractString
-- made the number an empty string).
ALTER TABLE `{database}`.job_events MODIFY COLUMN exit_code Nullable(Int64);

DROP VIEW IF EXISTS `{database}`.job_events_mv;

CREATE MATERIALIZED VIEW IF NOT EXISTS `{database}`.job_events_mv TO `{database}`.job_events AS
SELECT
    event_id, type, cluster, subject AS job_id, occurred_at,
    JSONExtractString(payload, 'state') AS state,
    JSONExtractString(payload, 'raw_state') AS raw_state,
    JSONExtractUInt(payload, 'attempt') AS attempt,
    JSONExtract(payload, 'exit_code', 'Nullable(Int64)') AS exit_code,
    JSONExtract(payload, 'nodes', 'Array(String)') AS nodes,
    JSONExtractUInt(payload, 'gpus') AS gpus,
    JSONExtractString(payload, 'reason') AS reason,
    if(JSONType(payload, 'signal') = 'String', JSONExtractString(payload, 'signal'),
       if(JSONType(payload, 'signal') IN ('Int64', 'UInt64'), JSONExtractRaw(payload, 'signal'), '')) AS signal,
    JSONExtract(payload, 'step', 'Nullable(Int64)') AS step,
    JSONExtractString(payload, 'uri') AS uri
FROM `{database}`.events
WHERE type IN ('JobSubmitted', 'JobStateChanged', 'JobExited', 'CheckpointSaved', 'LogSignalDetected');

-- Float32 read back a different number than the event carried (0.1 became 0.100000001).
ALTER TABLE `{database}`.gpu_samples
    MODIFY COLUMN utilization_pct Nullable(Float64),
    MODIFY COLUMN temperature_c Nullable(Float64),
    MODIFY COLUMN power_w Nullable(Float64);

DROP VIEW IF EXISTS `{database}`.gpu_samples_mv;

CREATE MATERIALIZED VIEW IF NOT EXISTS `{database}`.gpu_samples_mv TO `{database}`.gpu_samples AS
SELECT
    event_id, cluster, subject AS node, occurred_at,
    JSONExtractUInt(payload, 'gpu') AS gpu,
    JSONExtract(payload, 'utilization_pct', 'Nullable(Float64)') AS utilization_pct,
    JSONExtract(payload, 'memory_used_bytes', 'Nullable(UInt64)') AS memory_used_bytes,
    JSONExtract(payload, 'temperature_c', 'Nullable(Float64)') AS temperature_c,
    JSONExtract(payload, 'power_w', 'Nullable(Float64)') AS power_w,
    JSONExtract(payload, 'ecc_single_bit', 'Nullable(UInt64)') AS ecc_single_bit,
    JSONExtract(payload, 'ecc_double_bit', 'Nullable(UInt64)') AS ecc_double_bit,
    JSONExtract(payload, 'remapped_rows_uncorrectable', 'Nullable(UInt64)') AS remapped_rows_uncorrectable,
    JSONExtract(payload, 'nvlink_crc_errors', 'Nullable(UInt64)') AS nvlink_crc_errors,
    JSONExtract(payload, 'nvlink_links_down', 'Nullable(UInt32)') AS nvlink_links_down,
    JSONExtract(payload, 'pcie_replay_errors', 'Nullable(UInt64)') AS pcie_replay_errors,
    JSONExtract(payload, 'throttle_reasons', 'Array(String)') AS throttle_reasons
FROM `{database}`.events
WHERE type = 'GpuSampled';
