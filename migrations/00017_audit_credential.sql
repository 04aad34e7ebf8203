-- Who acted, by credential as well as by name: token_id is the actor's API token (0 for other
-- kinds), since a revoked token's name may be given to a new one; credential is what
-- confirmations and idempotency keys are bound to (a token's id, a browser session, a proxy
-- user: auth.Identity.Credential). Rows written before have neither: their keys are found by no
-- later start, which then starts anew.

-- +goose Up
ALTER TABLE audit_log ADD COLUMN token_id INTEGER NOT NULL DEFAULT 0;
ALTER TABLE audit_log ADD COLUMN credential TEXT NOT NULL DEFAULT '';
DROP INDEX audit_log_idempotency;
CREATE INDEX audit_log_idempotency ON audit_log (credential, idempotency_key) WHERE idempotency_key <> '';

-- +goose Down
DROP INDEX audit_log_idempotency;
CREATE INDEX audit_log_idempotency ON audit_log (actor, idempotency_key) WHERE idempotency_key <> '';
ALTER TABLE audit_log DROP COLUMN credential;
ALTER TABLE audit_log DROP COLUMN token_id;
