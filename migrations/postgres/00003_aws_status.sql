-- See ../00003_aws_status.sql.

-- +goose Up
CREATE TABLE aws_operations (
    region          TEXT   NOT NULL,
    operation       TEXT   NOT NULL,
    last_success_at BIGINT NOT NULL DEFAULT 0,
    last_failure_at BIGINT NOT NULL DEFAULT 0,
    failure_code    TEXT   NOT NULL DEFAULT '',
    failure_message TEXT   NOT NULL DEFAULT '',
    failure_status  BIGINT NOT NULL DEFAULT 0,
    failures_in_row BIGINT NOT NULL DEFAULT 0,
    backoff_until   BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (region, operation)
);

CREATE TABLE collector_loops (
    loop            TEXT   NOT NULL,
    region          TEXT   NOT NULL,
    finished_at     BIGINT NOT NULL,
    last_success_at BIGINT NOT NULL DEFAULT 0,
    queues          BIGINT NOT NULL DEFAULT 0,
    failed_queues   BIGINT NOT NULL DEFAULT 0,
    calls           BIGINT NOT NULL DEFAULT 0,
    failures        BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (loop, region)
);

ALTER TABLE sample_messages ADD COLUMN own_receives BIGINT NOT NULL DEFAULT 0;
ALTER TABLE queues ADD COLUMN peek_paused TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE queues DROP COLUMN peek_paused;
ALTER TABLE sample_messages DROP COLUMN own_receives;
DROP TABLE collector_loops;
DROP TABLE aws_operations;
