-- Every event, trigger and action result: the envelope in columns, the payload as JSON (the raw
-- record of history; the typed tables of 002 are derived from it by materialized views).
-- ReplacingMergeTree on the full sort key (which ends in event_id) collapses a row the sink wrote
-- twice after a restart; the insert deduplication token drops a retried batch outright, which
-- needs `non_replicated_deduplication_window` on a non-replicated MergeTree (chDB included).
CREATE TABLE IF NOT EXISTS `{database}`.events
(
    event_id       UUID,
    type           LowCardinality(String),
    schema_version UInt16,
    source         String,
    cluster        LowCardinality(String),
    subject        String,
    occurred_at    DateTime64(6, 'UTC'),
    observed_at    DateTime64(6, 'UTC'),
    topic          LowCardinality(String),
    partition      UInt16,
    offset         UInt64,
    payload        String,
    inserted_at    DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(inserted_at)
PARTITION BY toDate(occurred_at)
ORDER BY (cluster, subject, occurred_at, event_id)
TTL toDateTime(occurred_at) + INTERVAL {ttl_days} DAY
SETTINGS non_replicated_deduplication_window = 1000;

-- Records no consumer could decode (the `deadletter` topic, plus what the sink itself rejects).
CREATE TABLE IF NOT EXISTS `{database}`.dead_letters
(
    consumer         LowCardinality(String),
    reason           LowCardinality(String),
    detail           String,
    topic            LowCardinality(String),
    partition        UInt32,
    offset           UInt64,
    key              Nullable(String),
    raw              String,
    dead_lettered_at DateTime64(6, 'UTC'),
    inserted_at      DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(inserted_at)
PARTITION BY toDate(dead_lettered_at)
ORDER BY (topic, partition, offset, consumer)
TTL toDateTime(dead_lettered_at) + INTERVAL {ttl_days} DAY
SETTINGS non_replicated_deduplication_window = 1000;
