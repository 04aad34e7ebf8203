-- See ../00017_audit_credential.sql.

-- +goose Up
ALTER TABLE audit_log ADD COLUMN token_id BIGINT NOT NULL DEFAULT 0;
ALTER TABLE audit_log ADD COLUMN credential TEXT NOT NULL DEFAULT '';
DROP INDEX audit_log_idempotency;
CREATE INDEX audit_log_idempotency ON audit_log (credential, idempotency_key) WHERE idempotency_key <> '';

-- +goose Down
DROP INDEX audit_log_idempotency;
CREATE INDEX audit_log_idempotency ON audit_log (actor, idempotency_key) WHERE idempotency_key <> '';
ALTER TABLE audit_log DROP COLUMN credential;
ALTER TABLE audit_log DROP COLUMN token_id;
