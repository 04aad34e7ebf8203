-- The archive keeps, whole, every message a discard took out of a dead-letter queue: toolq
-- deletes a message from SQS only once its row here is committed. A restore sends archived
-- messages to a queue again and marks them restored (where, when, by which job), never deletes
-- them; retention (--archive-retention) does, logged.

-- +goose Up
CREATE TABLE archived_messages (
    id                     INTEGER PRIMARY KEY,
    queue_id               INTEGER NOT NULL,
    queue_arn              TEXT    NOT NULL,
    job_id                 INTEGER NOT NULL,
    message_id             TEXT    NOT NULL,
    body                   TEXT    NOT NULL,
    message_attributes     TEXT    NOT NULL DEFAULT '{}',
    system_attributes      TEXT    NOT NULL DEFAULT '{}',
    group_id               TEXT    NOT NULL DEFAULT '',
    deduplication_id       TEXT    NOT NULL DEFAULT '',
    sequence_number        TEXT    NOT NULL DEFAULT '',
    dead_letter_source_arn TEXT    NOT NULL DEFAULT '',
    trace_header           TEXT    NOT NULL DEFAULT '',
    sent_at                INTEGER NOT NULL DEFAULT 0,
    receive_count          INTEGER NOT NULL DEFAULT 0,
    body_hash              TEXT    NOT NULL DEFAULT '',
    tool_name              TEXT    NOT NULL DEFAULT '',
    tool_call_id           TEXT    NOT NULL DEFAULT '',
    session_id             TEXT    NOT NULL DEFAULT '',
    dimensions             TEXT    NOT NULL DEFAULT '{}',
    reason                 TEXT    NOT NULL DEFAULT '',
    discarded_by           TEXT    NOT NULL DEFAULT '',
    discarded_at           INTEGER NOT NULL,
    restored_at            INTEGER NOT NULL DEFAULT 0,
    restored_to            TEXT    NOT NULL DEFAULT '',
    restore_job_id         INTEGER NOT NULL DEFAULT 0,
    UNIQUE (job_id, message_id)
);
CREATE INDEX archived_messages_queue ON archived_messages (queue_id, id);
CREATE INDEX archived_messages_discarded ON archived_messages (discarded_at);

-- +goose Down
DROP INDEX archived_messages_discarded;
DROP INDEX archived_messages_queue;
DROP TABLE archived_messages;
