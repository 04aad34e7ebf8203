-- The dashboards sharing this database (replicas on PostgreSQL; on SQLite, the one process),
-- each as its last heartbeat left it, for the status page: which one leads the collector,
-- since when, and which ones are alive.

-- +goose Up
CREATE TABLE replicas (
    id            TEXT    PRIMARY KEY,
    host          TEXT    NOT NULL DEFAULT '',
    version       TEXT    NOT NULL DEFAULT '',
    started_at    INTEGER NOT NULL,
    heartbeat_at  INTEGER NOT NULL,
    is_leader       INTEGER NOT NULL DEFAULT 0,
    leader_since INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- +goose Down
DROP TABLE replicas;
