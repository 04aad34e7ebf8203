-- See ../00004_browser_sessions.sql.

-- +goose Up
CREATE TABLE browser_sessions (
    hash       BYTEA  PRIMARY KEY,
    token_id   BIGINT NOT NULL REFERENCES api_tokens (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    ended_at   BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX browser_sessions_expiry ON browser_sessions (expires_at);

-- +goose Down
DROP TABLE browser_sessions;
