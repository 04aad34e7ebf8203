-- What surrounds each watched queue, as the collector's topology loop reads it at the discovery
-- cadence: the Lambda event source mappings that drain a queue (with their function's timeout),
-- the EventBridge rule targets that feed a queue or name it as their dead-letter queue, and the
-- CloudWatch alarms on AWS/SQS metrics of a queue. The advisor reads these facts. Mappings are
-- replaced queue by queue, targets and alarms region by region, and only by a complete reading:
-- a listing that failed leaves the last one in place (the collector's sight says it failed).

-- +goose Up
CREATE TABLE event_source_mappings (
    uuid                       TEXT    PRIMARY KEY,
    region                     TEXT    NOT NULL,
    queue_arn                  TEXT    NOT NULL, -- the mapping's EventSourceArn
    function_arn               TEXT    NOT NULL DEFAULT '',
    state                      TEXT    NOT NULL DEFAULT '',
    state_reason               TEXT    NOT NULL DEFAULT '',
    last_processing_result     TEXT    NOT NULL DEFAULT '',
    batch_size                 INTEGER NOT NULL DEFAULT 0,
    batching_window            INTEGER NOT NULL DEFAULT 0, -- MaximumBatchingWindowInSeconds
    report_batch_item_failures INTEGER NOT NULL DEFAULT 0,
    maximum_concurrency        INTEGER NOT NULL DEFAULT 0, -- ScalingConfig; 0: not set
    function_timeout           INTEGER NOT NULL DEFAULT 0, -- seconds; 0: unknown
    function_error             TEXT    NOT NULL DEFAULT '', -- why the timeout is unknown
    read_at                    INTEGER NOT NULL
);
CREATE INDEX event_source_mappings_queue ON event_source_mappings (queue_arn);

CREATE TABLE eventbridge_targets (
    rule_arn            TEXT    NOT NULL,
    target_id           TEXT    NOT NULL,
    region              TEXT    NOT NULL,
    bus_name            TEXT    NOT NULL,
    bus_arn             TEXT    NOT NULL DEFAULT '',
    rule_name           TEXT    NOT NULL,
    rule_state          TEXT    NOT NULL DEFAULT '',
    target_arn          TEXT    NOT NULL,
    dead_letter_arn     TEXT    NOT NULL DEFAULT '', -- the target's DeadLetterConfig; '' without one
    max_event_age       INTEGER NOT NULL DEFAULT 0,  -- RetryPolicy.MaximumEventAgeInSeconds; 0: not set (24 h)
    max_retry_attempts  INTEGER NOT NULL DEFAULT -1, -- RetryPolicy.MaximumRetryAttempts; -1: not set (185)
    read_at             INTEGER NOT NULL,
    PRIMARY KEY (rule_arn, target_id)
) WITHOUT ROWID;
CREATE INDEX eventbridge_targets_region ON eventbridge_targets (region);
CREATE INDEX eventbridge_targets_dead_letter ON eventbridge_targets (dead_letter_arn) WHERE dead_letter_arn <> '';

-- One row per alarm and SQS queue metric it watches: a metric-math alarm may watch several.
CREATE TABLE queue_alarms (
    region           TEXT    NOT NULL,
    alarm_name       TEXT    NOT NULL,
    queue_name       TEXT    NOT NULL, -- the QueueName dimension
    metric_name      TEXT    NOT NULL,
    alarm_arn        TEXT    NOT NULL DEFAULT '',
    state            TEXT    NOT NULL DEFAULT '',
    state_reason     TEXT    NOT NULL DEFAULT '',
    state_updated_at INTEGER NOT NULL DEFAULT 0,
    actions_enabled  INTEGER NOT NULL DEFAULT 0,
    read_at          INTEGER NOT NULL,
    PRIMARY KEY (region, alarm_name, queue_name, metric_name)
) WITHOUT ROWID;

-- +goose Down
DROP TABLE queue_alarms;
DROP TABLE eventbridge_targets;
DROP TABLE event_source_mappings;
