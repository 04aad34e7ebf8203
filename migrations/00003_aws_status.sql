-- What the collector knows of its own sight: each AWS operation's last success and failure per
-- region, and each loop's last cycle per region, so that a failed read is shown (status page,
-- health, summary) instead of old data looking current. And the dashboard's own receives of
-- each sampled message, so that the receive count it shows subtracts only those, and why it
-- paused sampling a queue.

-- +goose Up
CREATE TABLE aws_operations (
    region          TEXT    NOT NULL,
    operation       TEXT    NOT NULL,
    last_success_at INTEGER NOT NULL DEFAULT 0,
    last_failure_at INTEGER NOT NULL DEFAULT 0,
    failure_code    TEXT    NOT NULL DEFAULT '',
    failure_message TEXT    NOT NULL DEFAULT '',
    failure_status  INTEGER NOT NULL DEFAULT 0, -- the endpoint's HTTP status; 0 when it never answered
    failures_in_row INTEGER NOT NULL DEFAULT 0,
    backoff_until   INTEGER NOT NULL DEFAULT 0, -- not called again before this time
    PRIMARY KEY (region, operation)
) WITHOUT ROWID;

CREATE TABLE collector_loops (
    loop            TEXT    NOT NULL,
    region          TEXT    NOT NULL,
    finished_at     INTEGER NOT NULL,
    last_success_at INTEGER NOT NULL DEFAULT 0,
    queues          INTEGER NOT NULL DEFAULT 0, -- the queues of the region the cycle was about
    failed_queues   INTEGER NOT NULL DEFAULT 0, -- of those, the ones it could not read
    calls           INTEGER NOT NULL DEFAULT 0,
    failures        INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (loop, region)
) WITHOUT ROWID;

ALTER TABLE sample_messages ADD COLUMN own_receives INTEGER NOT NULL DEFAULT 0;
-- Why the collector stopped sampling a queue it may sample ('' while it samples it): a message
-- that one more receive would leave no delivery for its consumers, say.
ALTER TABLE queues ADD COLUMN peek_paused TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE queues DROP COLUMN peek_paused;
ALTER TABLE sample_messages DROP COLUMN own_receives;
DROP TABLE collector_loops;
DROP TABLE aws_operations;
