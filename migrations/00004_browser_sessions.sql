-- Browser sessions of API tokens (POST /login). The session cookie names a random session id;
-- only its SHA-256 is kept here, so that POST /logout can end a session on the server: a copy
-- of the cookie taken before the sign-out is refused after it. Revoking the token ends its
-- sessions too (the lookup joins api_tokens), and deleting the token deletes them.

-- +goose Up
CREATE TABLE browser_sessions (
    hash       BLOB    PRIMARY KEY,
    token_id   INTEGER NOT NULL REFERENCES api_tokens (id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    ended_at   INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX browser_sessions_expiry ON browser_sessions (expires_at);

-- +goose Down
DROP TABLE browser_sessions;
