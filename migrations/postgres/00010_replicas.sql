-- See ../00010_replicas.sql.

-- +goose Up
CREATE TABLE replicas (
    id            TEXT    PRIMARY KEY,
    host          TEXT    NOT NULL DEFAULT '',
    version       TEXT    NOT NULL DEFAULT '',
    started_at    BIGINT  NOT NULL,
    heartbeat_at  BIGINT  NOT NULL,
    is_leader       BOOLEAN NOT NULL DEFAULT FALSE,
    leader_since BIGINT  NOT NULL DEFAULT 0
);

-- +goose Down
DROP TABLE replicas;
