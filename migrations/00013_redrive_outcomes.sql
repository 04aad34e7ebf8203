-- What a redrive moved, and what came back. A move task gives every message it moves a new
-- message id, so a message that fails again after a redrive is told by what it carries: a hash
-- of its whole body (body_hash, SHA-256 hex, computed by the collector before it truncates the
-- body it stores) and its tool call id. first_seen is the instant of the sample that first saw a
-- message in its queue: when it arrived there, at the latest.
--
-- redrive_samples is the sample toolq remembered when a move task started (the DLQ's newest, at
-- or before the start; sample_id 0 when there was none), with how much of the DLQ it saw;
-- redrive_messages are its messages' identities, tools, dimensions and groups: hashes and ids,
-- never the bodies again. Both stay as long as the move task does.

-- +goose Up
ALTER TABLE messages ADD COLUMN body_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN first_seen INTEGER NOT NULL DEFAULT 0;
CREATE INDEX messages_queue_first_seen ON messages (queue_id, first_seen);

CREATE TABLE redrive_samples (
    move_task_id   INTEGER PRIMARY KEY REFERENCES move_tasks (id) ON DELETE CASCADE,
    queue_id       INTEGER NOT NULL,
    sample_id      INTEGER NOT NULL DEFAULT 0,
    sample_at      INTEGER NOT NULL DEFAULT 0,
    seen           INTEGER NOT NULL DEFAULT 0,
    approx_visible INTEGER NOT NULL DEFAULT 0,
    capped         INTEGER NOT NULL DEFAULT 0,
    remembered_at  INTEGER NOT NULL
);

CREATE TABLE redrive_messages (
    move_task_id INTEGER NOT NULL REFERENCES redrive_samples (move_task_id) ON DELETE CASCADE,
    message_id   TEXT    NOT NULL,
    body_hash    TEXT    NOT NULL DEFAULT '',
    tool_call_id TEXT    NOT NULL DEFAULT '',
    tool_name    TEXT    NOT NULL DEFAULT '',
    group_id     TEXT    NOT NULL DEFAULT '',
    dimensions   TEXT    NOT NULL DEFAULT '{}',
    PRIMARY KEY (move_task_id, message_id)
) WITHOUT ROWID;

-- A DLQ's new messages are looked up by body hash and tool call id among what its redrives
-- remembered (store.RedrivenArrivals).
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
