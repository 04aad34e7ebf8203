-- A selection job (a selective redrive) moves chosen messages of a dead-letter queue by
-- receiving, sending and deleting them. It is listed with the move tasks, as a move_tasks row of
-- kind 'selection', so that the redrive list, its statuses, its page and what came back of it
-- work for both kinds; selection_jobs holds what a move task has not (the selection, who asked,
-- the job's own counts), and selection_journal one row per message the job touched, each step
-- written before it is taken, so that a restarted job knows what may have happened.

-- +goose Up
ALTER TABLE move_tasks ADD COLUMN kind TEXT NOT NULL DEFAULT 'move_task';

CREATE TABLE selection_jobs (
    move_task_id INTEGER PRIMARY KEY REFERENCES move_tasks (id) ON DELETE CASCADE,
    queue_id     INTEGER NOT NULL,
    selection    TEXT    NOT NULL,
    actor        TEXT    NOT NULL DEFAULT '',
    matched      INTEGER NOT NULL DEFAULT 0,
    held         INTEGER NOT NULL DEFAULT 0,
    released     INTEGER NOT NULL DEFAULT 0,
    failed       INTEGER NOT NULL DEFAULT 0,
    not_reached  INTEGER NOT NULL DEFAULT 0,
    ended_at     INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX selection_jobs_queue ON selection_jobs (queue_id);

CREATE TABLE selection_journal (
    move_task_id    INTEGER NOT NULL REFERENCES selection_jobs (move_task_id) ON DELETE CASCADE,
    message_id      TEXT    NOT NULL,
    state           TEXT    NOT NULL,
    destination_arn TEXT    NOT NULL DEFAULT '',
    group_id        TEXT    NOT NULL DEFAULT '',
    receipt_handle  TEXT    NOT NULL DEFAULT '',
    new_message_id  TEXT    NOT NULL DEFAULT '',
    body_hash       TEXT    NOT NULL DEFAULT '',
    tool_call_id    TEXT    NOT NULL DEFAULT '',
    tool_name       TEXT    NOT NULL DEFAULT '',
    dimensions      TEXT    NOT NULL DEFAULT '{}',
    error           TEXT    NOT NULL DEFAULT '',
    updated_at      INTEGER NOT NULL,
    PRIMARY KEY (move_task_id, message_id)
);
CREATE INDEX selection_journal_state ON selection_journal (move_task_id, state, message_id);

-- +goose Down
DROP INDEX selection_journal_state;
DROP TABLE selection_journal;
DROP INDEX selection_jobs_queue;
DROP TABLE selection_jobs;
ALTER TABLE move_tasks DROP COLUMN kind;
