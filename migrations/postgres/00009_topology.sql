-- See ../00009_topology.sql.

-- +goose Up
CREATE TABLE event_source_mappings (
    uuid                       TEXT    PRIMARY KEY,
    region                     TEXT    NOT NULL,
    queue_arn                  TEXT    NOT NULL,
    function_arn               TEXT    NOT NULL DEFAULT '',
    state                      TEXT    NOT NULL DEFAULT '',
    state_reason               TEXT    NOT NULL DEFAULT '',
    last_processing_result     TEXT    NOT NULL DEFAULT '',
    batch_size                 BIGINT  NOT NULL DEFAULT 0,
    batching_window            BIGINT  NOT NULL DEFAULT 0,
    report_batch_item_failures BOOLEAN NOT NULL DEFAULT FALSE,
    maximum_concurrency        BIGINT  NOT NULL DEFAULT 0,
    function_timeout           BIGINT  NOT NULL DEFAULT 0,
    function_error             TEXT    NOT NULL DEFAULT '',
    read_at                    BIGINT  NOT NULL
);
CREATE INDEX event_source_mappings_queue ON event_source_mappings (queue_arn);

CREATE TABLE eventbridge_targets (
    rule_arn            TEXT   NOT NULL,
    target_id           TEXT   NOT NULL,
    region              TEXT   NOT NULL,
    bus_name            TEXT   NOT NULL,
    bus_arn             TEXT   NOT NULL DEFAULT '',
    rule_name           TEXT   NOT NULL,
    rule_state          TEXT   NOT NULL DEFAULT '',
    target_arn          TEXT   NOT NULL,
    dead_letter_arn     TEXT   NOT NULL DEFAULT '',
    max_event_age       BIGINT NOT NULL DEFAULT 0,
    max_retry_attempts  BIGINT NOT NULL DEFAULT -1,
    read_at             BIGINT NOT NULL,
    PRIMARY KEY (rule_arn, target_id)
);
CREATE INDEX eventbridge_targets_region ON eventbridge_targets (region);
CREATE INDEX eventbridge_targets_dead_letter ON eventbridge_targets (dead_letter_arn) WHERE dead_letter_arn <> '';

CREATE TABLE queue_alarms (
    region           TEXT    NOT NULL,
    alarm_name       TEXT    NOT NULL,
    queue_name       TEXT    NOT NULL,
    metric_name      TEXT    NOT NULL,
    alarm_arn        TEXT    NOT NULL DEFAULT '',
    state            TEXT    NOT NULL DEFAULT '',
    state_reason     TEXT    NOT NULL DEFAULT '',
    state_updated_at BIGINT  NOT NULL DEFAULT 0,
    actions_enabled  BOOLEAN NOT NULL DEFAULT FALSE,
    read_at          BIGINT  NOT NULL,
    PRIMARY KEY (region, alarm_name, queue_name, metric_name)
);

-- +goose Down
DROP TABLE queue_alarms;
DROP TABLE eventbridge_targets;
DROP TABLE event_source_mappings;
