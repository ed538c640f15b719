-- Every event, trigger and action result, envelope in columns and the whole document as JSON.
-- ReplacingMergeTree on event_id collapses a row the sink wrote twice after a crash mid-batch.
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
SETTINGS non_replicated_deduplication_window = 1000;
