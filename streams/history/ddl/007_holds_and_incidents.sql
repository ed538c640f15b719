-- A decision a silence held is its own result (`ActionHeld`), counted as `held`, never as a
-- failure: the view over action results is made again to take it (a result the sink writes
-- between the two statements is not in `action_results`; it stays in `events`).
--
-- `incidents`: every version of every incident the streams app published (opened, updated,
-- resolved); `incidents_now` keeps each incident's latest.

DROP VIEW IF EXISTS `{database}`.action_results_mv;

CREATE MATERIALIZED VIEW IF NOT EXISTS `{database}`.action_results_mv TO `{database}`.action_results AS
SELECT
    event_id, type,
    multiIf(
        type = 'ActionStarted', 'started',
        type = 'ActionSucceeded', 'succeeded',
        type = 'ActionHeld', 'held',
        'failed'
    ) AS outcome,
    cluster, subject, occurred_at,
    toUUID(JSONExtractString(payload, 'trigger_id')) AS trigger_id,
    JSONExtractString(payload, 'trigger_type') AS trigger_type,
    JSONExtractString(payload, 'action') AS action,
    JSONExtractUInt(payload, 'attempt') AS attempt,
    JSONExtractBool(payload, 'dry_run') AS dry_run,
    if(type = 'ActionHeld', JSONExtractString(payload, 'why'), JSONExtractString(payload, 'error')) AS error,
    JSONExtractBool(payload, 'permanent') AS permanent,
    JSONExtractRaw(payload, 'detail') AS detail
FROM `{database}`.events
WHERE type IN ('ActionStarted', 'ActionSucceeded', 'ActionFailed', 'ActionHeld');

CREATE TABLE IF NOT EXISTS `{database}`.incidents
(
    event_id        UUID,
    type            LowCardinality(String),
    incident        String,
    cluster         LowCardinality(String),
    occurred_at     DateTime64(6, 'UTC'),
    state           LowCardinality(String),
    kind            LowCardinality(String),
    severity        LowCardinality(String),
    domain          String,
    title           String,
    cause           String,
    opened_at       DateTime64(6, 'UTC'),
    first_fault_at  DateTime64(6, 'UTC'),
    last_fault_at   DateTime64(6, 'UTC'),
    resolved_at     Nullable(DateTime64(6, 'UTC')),
    nodes           String,
    nodes_count     UInt32,
    states          Map(String, UInt32),
    refused         String,
    held_by         Array(String),
    inserted_at     DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(opened_at)
ORDER BY (cluster, incident, occurred_at, event_id)
TTL toDateTime(inserted_at) + INTERVAL {ttl_days} DAY;

CREATE MATERIALIZED VIEW IF NOT EXISTS `{database}`.incidents_mv TO `{database}`.incidents AS
SELECT
    event_id, type, subject AS incident, cluster, occurred_at,
    JSONExtractString(payload, 'state') AS state,
    JSONExtractString(payload, 'kind') AS kind,
    JSONExtractString(payload, 'severity') AS severity,
    JSONExtractString(payload, 'domain') AS domain,
    JSONExtractString(payload, 'title') AS title,
    JSONExtractString(payload, 'cause') AS cause,
    parseDateTime64BestEffort(JSONExtractString(payload, 'opened_at'), 6, 'UTC') AS opened_at,
    parseDateTime64BestEffort(JSONExtractString(payload, 'first_fault_at'), 6, 'UTC') AS first_fault_at,
    parseDateTime64BestEffort(JSONExtractString(payload, 'last_fault_at'), 6, 'UTC') AS last_fault_at,
    parseDateTime64BestEffortOrNull(JSONExtractString(payload, 'resolved_at'), 6, 'UTC') AS resolved_at,
    JSONExtractString(payload, 'nodes') AS nodes,
    JSONExtractUInt(payload, 'nodes_count') AS nodes_count,
    JSONExtract(payload, 'states', 'Map(String, UInt32)') AS states,
    JSONExtractString(payload, 'refused') AS refused,
    JSONExtract(payload, 'held_by', 'Array(String)') AS held_by
FROM `{database}`.events
WHERE type IN ('IncidentOpened', 'IncidentUpdated', 'IncidentResolved');

CREATE VIEW IF NOT EXISTS `{database}`.incidents_now AS
SELECT * FROM `{database}`.incidents
ORDER BY incident, occurred_at DESC, event_id
LIMIT 1 BY incident;
