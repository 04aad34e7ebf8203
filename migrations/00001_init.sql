-- toolq's schema. Times are unix milliseconds (INTEGER), 0 meaning "not yet" / "never";
-- attribute maps and message attributes are JSON TEXT. Rows that are read by key and time
-- (samples, datapoints) live in WITHOUT ROWID tables keyed by that, which keeps them small and
-- makes "newest per queue" and "series by queue and time" index seeks.

-- +goose Up
CREATE TABLE queues (
    id                INTEGER PRIMARY KEY,
    arn               TEXT    NOT NULL UNIQUE,
    region            TEXT    NOT NULL DEFAULT '',
    name              TEXT    NOT NULL,
    url               TEXT    NOT NULL DEFAULT '',
    fifo              INTEGER NOT NULL DEFAULT 0,
    first_seen        INTEGER NOT NULL,
    last_seen         INTEGER NOT NULL,
    gone_at           INTEGER NOT NULL DEFAULT 0,
    attributes        TEXT    NOT NULL DEFAULT '{}',
    attributes_at     INTEGER NOT NULL DEFAULT 0,
    dlq_target_arn    TEXT    NOT NULL DEFAULT '',
    max_receive_count INTEGER NOT NULL DEFAULT 0,
    listed_sources    TEXT    NOT NULL DEFAULT '[]', -- ListDeadLetterSourceQueues, JSON array of ARNs
    peek_enabled      INTEGER NOT NULL DEFAULT 0,
    backfilled_at     INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX queues_name ON queues (name);
CREATE INDEX queues_dlq_target ON queues (dlq_target_arn) WHERE dlq_target_arn <> '';

-- Depth readings. resolution 0: a raw GetQueueAttributes sample; else the width in seconds of
-- the roll-up bucket starting at "at" (values are the bucket's maxima).
CREATE TABLE attribute_samples (
    queue_id   INTEGER NOT NULL REFERENCES queues (id),
    at         INTEGER NOT NULL,
    resolution INTEGER NOT NULL DEFAULT 0,
    visible    INTEGER NOT NULL,
    in_flight  INTEGER NOT NULL,
    delayed    INTEGER NOT NULL,
    PRIMARY KEY (queue_id, at, resolution)
) WITHOUT ROWID;

-- CloudWatch metric names, so that datapoints carry a small integer instead of the name, and
-- the statistic each is fetched and rolled up with (store.MetricStat).
CREATE TABLE metric_names (
    id   INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    stat TEXT NOT NULL
);

CREATE TABLE metric_points (
    queue_id  INTEGER NOT NULL REFERENCES queues (id),
    metric_id INTEGER NOT NULL REFERENCES metric_names (id),
    at        INTEGER NOT NULL,
    period    INTEGER NOT NULL,
    value     REAL    NOT NULL,
    PRIMARY KEY (queue_id, metric_id, at, period)
) WITHOUT ROWID;

-- One peek pass over a queue.
CREATE TABLE samples (
    id             INTEGER PRIMARY KEY,
    queue_id       INTEGER NOT NULL REFERENCES queues (id),
    kind           TEXT    NOT NULL,
    at             INTEGER NOT NULL,
    seen           INTEGER NOT NULL DEFAULT 0,
    approx_visible INTEGER NOT NULL DEFAULT 0,
    receives       INTEGER NOT NULL DEFAULT 0,
    messages_taken INTEGER NOT NULL DEFAULT 0,
    capped         INTEGER NOT NULL DEFAULT 0,
    error          TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX samples_queue_at ON samples (queue_id, at);

-- What a message is never changes (SQS message ids are unique per queue), so a DLQ message seen
-- by a sample a minute for a day is stored once here, and each sighting is a small row of
-- sample_messages. last_seen lets Prune find messages no kept sample refers to.
CREATE TABLE messages (
    id                     INTEGER PRIMARY KEY,
    queue_id               INTEGER NOT NULL REFERENCES queues (id),
    message_id             TEXT    NOT NULL,
    group_id               TEXT    NOT NULL DEFAULT '',
    deduplication_id       TEXT    NOT NULL DEFAULT '',
    sequence_number        TEXT    NOT NULL DEFAULT '',
    sent_at                INTEGER NOT NULL DEFAULT 0,
    first_received_at      INTEGER NOT NULL DEFAULT 0,
    dead_letter_source_arn TEXT    NOT NULL DEFAULT '',
    attributes             TEXT    NOT NULL DEFAULT '[]',
    body                   TEXT    NOT NULL DEFAULT '',
    body_size              INTEGER NOT NULL DEFAULT 0,
    body_truncated         INTEGER NOT NULL DEFAULT 0,
    tool_name              TEXT    NOT NULL DEFAULT '',
    tool_call_id           TEXT    NOT NULL DEFAULT '',
    session_id             TEXT    NOT NULL DEFAULT '',
    last_seen              INTEGER NOT NULL DEFAULT 0,
    UNIQUE (queue_id, message_id)
);
CREATE INDEX messages_last_seen ON messages (last_seen);

-- One message as one sample saw it: the largest table (a sample a minute of ~50 messages), so
-- it is kept to its key and two small numbers. Ordered by message_ref within a sample, which is
-- the messages page's cursor. message_ref has no foreign key on purpose: SQLite would scan this
-- table for every message Prune deletes, and Prune only deletes messages no kept sample holds.
CREATE TABLE sample_messages (
    sample_id        INTEGER NOT NULL REFERENCES samples (id) ON DELETE CASCADE,
    message_ref      INTEGER NOT NULL,
    receive_count    INTEGER NOT NULL DEFAULT 0,
    near_max_receive INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (sample_id, message_ref)
) WITHOUT ROWID;

CREATE TABLE group_backlog (
    sample_id          INTEGER NOT NULL REFERENCES samples (id) ON DELETE CASCADE,
    group_id           TEXT    NOT NULL,
    messages           INTEGER NOT NULL,
    oldest_sent_at     INTEGER NOT NULL DEFAULT 0,
    head_message_id    TEXT    NOT NULL DEFAULT '',
    head_receive_count INTEGER NOT NULL DEFAULT 0,
    blocked            INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (sample_id, group_id)
) WITHOUT ROWID;

-- Move tasks, keyed by source and start time: SQS reports the handle only while a task runs.
CREATE TABLE move_tasks (
    id              INTEGER PRIMARY KEY,
    queue_id        INTEGER NOT NULL REFERENCES queues (id),
    task_handle     TEXT    NOT NULL DEFAULT '',
    status          TEXT    NOT NULL,
    source_arn      TEXT    NOT NULL,
    destination_arn TEXT    NOT NULL DEFAULT '',
    max_per_second  INTEGER NOT NULL DEFAULT 0,
    moved           INTEGER NOT NULL DEFAULT 0,
    to_move         INTEGER NOT NULL DEFAULT 0,
    failure_reason  TEXT    NOT NULL DEFAULT '',
    started_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    UNIQUE (source_arn, started_at)
);
CREATE INDEX move_tasks_queue ON move_tasks (queue_id, started_at);
CREATE INDEX move_tasks_running ON move_tasks (status) WHERE status IN ('RUNNING', 'CANCELLING');

CREATE TABLE collector_runs (
    id          INTEGER PRIMARY KEY,
    kind        TEXT    NOT NULL,
    started_at  INTEGER NOT NULL,
    finished_at INTEGER NOT NULL DEFAULT 0,
    queues      INTEGER NOT NULL DEFAULT 0,
    calls       INTEGER NOT NULL DEFAULT 0,
    errors      INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX collector_runs_kind_finished ON collector_runs (kind, finished_at);
CREATE INDEX collector_runs_started ON collector_runs (started_at);

-- run_id and queue_id are 0 when an error belongs to no run or no queue; no foreign keys, so
-- that pruning runs never has to order its deletes.
CREATE TABLE collector_errors (
    id        INTEGER PRIMARY KEY,
    run_id    INTEGER NOT NULL DEFAULT 0,
    queue_id  INTEGER NOT NULL DEFAULT 0,
    operation TEXT    NOT NULL,
    code      TEXT    NOT NULL DEFAULT '',
    message   TEXT    NOT NULL DEFAULT '',
    at        INTEGER NOT NULL
);
CREATE INDEX collector_errors_queue_at ON collector_errors (queue_id, at);
CREATE INDEX collector_errors_at ON collector_errors (at);

-- Small singletons (the cost estimate), as JSON values.
CREATE TABLE kv (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE audit_log (
    id          INTEGER PRIMARY KEY,
    at          INTEGER NOT NULL,
    actor       TEXT    NOT NULL,
    actor_kind  TEXT    NOT NULL DEFAULT '',
    role        TEXT    NOT NULL DEFAULT '',
    action      TEXT    NOT NULL,
    queue_name  TEXT    NOT NULL DEFAULT '',
    queue_arn   TEXT    NOT NULL DEFAULT '',
    params      TEXT    NOT NULL DEFAULT '{}',
    result      TEXT    NOT NULL,
    detail      TEXT    NOT NULL DEFAULT '',
    remote_addr TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX audit_log_queue ON audit_log (queue_name, id);

-- API tokens: only the SHA-256 of the secret. A name is unique among live tokens only, so that
-- a revoked name can be reused.
CREATE TABLE api_tokens (
    id           INTEGER PRIMARY KEY,
    name         TEXT    NOT NULL,
    role         TEXT    NOT NULL,
    hash         BLOB    NOT NULL UNIQUE,
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER NOT NULL DEFAULT 0,
    revoked_at   INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX api_tokens_live_name ON api_tokens (name) WHERE revoked_at = 0;

-- +goose Down
DROP TABLE api_tokens;
DROP TABLE audit_log;
DROP TABLE kv;
DROP TABLE collector_errors;
DROP TABLE collector_runs;
DROP TABLE move_tasks;
DROP TABLE group_backlog;
DROP TABLE sample_messages;
DROP TABLE messages;
DROP TABLE samples;
DROP TABLE metric_points;
DROP TABLE metric_names;
DROP TABLE attribute_samples;
DROP TABLE queues;
