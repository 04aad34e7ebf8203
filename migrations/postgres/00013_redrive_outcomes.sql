-- See ../00013_redrive_outcomes.sql.

-- +goose Up
ALTER TABLE messages ADD COLUMN body_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN first_seen BIGINT NOT NULL DEFAULT 0;
CREATE INDEX messages_queue_first_seen ON messages (queue_id, first_seen);

CREATE TABLE redrive_samples (
    move_task_id   BIGINT  PRIMARY KEY REFERENCES move_tasks (id) ON DELETE CASCADE,
    queue_id       BIGINT  NOT NULL,
    sample_id      BIGINT  NOT NULL DEFAULT 0,
    sample_at      BIGINT  NOT NULL DEFAULT 0,
    seen           BIGINT  NOT NULL DEFAULT 0,
    approx_visible BIGINT  NOT NULL DEFAULT 0,
    capped         BOOLEAN NOT NULL DEFAULT FALSE,
    remembered_at  BIGINT  NOT NULL
);

CREATE TABLE redrive_messages (
    move_task_id BIGINT NOT NULL REFERENCES redrive_samples (move_task_id) ON DELETE CASCADE,
    message_id   TEXT   NOT NULL,
    body_hash    TEXT   NOT NULL DEFAULT '',
    tool_call_id TEXT   NOT NULL DEFAULT '',
    tool_name    TEXT   NOT NULL DEFAULT '',
    group_id     TEXT   NOT NULL DEFAULT '',
    dimensions   TEXT   NOT NULL DEFAULT '{}',
    PRIMARY KEY (move_task_id, message_id)
);

CREATE INDEX redrive_messages_body_hash ON redrive_messages (body_hash) WHERE body_hash <> '';
CREATE INDEX redrive_messages_tool_call ON redrive_messages (tool_call_id) WHERE tool_call_id <> '';

-- +goose Down
DROP INDEX redrive_messages_tool_call;
DROP INDEX redrive_messages_body_hash;
DROP TABLE redrive_messages;
DROP TABLE redrive_samples;
DROP INDEX messages_queue_first_seen;
ALTER TABLE messages DROP COLUMN first_seen;
ALTER TABLE messages DROP COLUMN body_hash;
